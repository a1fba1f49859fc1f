/**
 * The TCP proxy as a link shaper (issue 15), on loopback: one-way delay on every chunk both ways, order kept;
 * "loss" as a stall of the lost chunk and everything behind it (never a hole in the stream); a rate limit; a
 * blackhole partition that answers nothing and resets the holed connections at restore; a reset partition.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket, connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startTcpProxy, type TcpProxy } from '../src/tcp-proxy.js';

/** An echo server: every byte comes back. */
let echo: Server;
let echoPort: number;

before(async () => {
  echo = createServer((s) => {
    s.on('error', () => {}); // the partition tests reset it
    s.pipe(s);
  });
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
  echoPort = (echo.address() as { port: number }).port;
});
after(() => new Promise<void>((r) => echo.close(() => r())));

function open(p: TcpProxy): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(p.port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

/** Write `data`, resolve with what came back once `data.length` bytes did, and how long it took (ms). */
function roundTrip(s: Socket, data: Buffer): Promise<{ back: Buffer; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const got: Buffer[] = [];
    let n = 0;
    const onData = (d: Buffer) => {
      got.push(d);
      n += d.length;
      if (n >= data.length) {
        s.off('data', onData);
        resolve({ back: Buffer.concat(got), ms: performance.now() - started });
      }
    };
    s.on('data', onData);
    s.once('error', reject);
    s.write(data);
  });
}

describe('tcp proxy as a link shaper', () => {
  test('every chunk is delivered delayMs later each way: a round trip takes at least twice the delay', async () => {
    const p = await startTcpProxy({ host: '127.0.0.1', port: echoPort }, { shape: { delayMs: 60 } });
    try {
      const s = await open(p);
      for (let i = 0; i < 3; i++) {
        const { back, ms } = await roundTrip(s, Buffer.from(`ping ${i}`));
        assert.equal(back.toString(), `ping ${i}`);
        assert.ok(ms >= 120, `round trip ${ms} ms with a 60 ms one-way delay`);
        assert.ok(ms < 120 + 1_000, `round trip ${ms} ms`);
      }
      p.setShape({ delayMs: 5 });
      const { ms } = await roundTrip(s, Buffer.from('faster'));
      assert.ok(ms >= 10 && ms < 120, `after setShape: ${ms} ms`);
      s.destroy();
    } finally {
      await p.close();
    }
  });

  test('"loss" stalls the lost chunk and those behind it; bytes and order are intact', async () => {
    let draws = 0;
    // The first chunk is "lost"; the rest are not (they wait behind it).
    const random = () => (draws++ === 0 ? 0 : 0.99);
    const p = await startTcpProxy({ host: '127.0.0.1', port: echoPort }, { shape: { delayMs: 10, loss: 0.5, lossPenaltyMs: 150, random } });
    try {
      const s = await open(p);
      const got: Buffer[] = [];
      s.on('data', (d: Buffer) => got.push(d));
      const started = performance.now();
      const parts = Array.from({ length: 20 }, (_, i) => Buffer.from(`part-${String(i).padStart(2, '0')};`));
      for (const part of parts) {
        s.write(part);
        await new Promise((r) => setTimeout(r, 2));
      }
      const want = Buffer.concat(parts).toString();
      while (Buffer.concat(got).length < want.length) await new Promise((r) => setTimeout(r, 5));
      const ms = performance.now() - started;
      assert.equal(Buffer.concat(got).toString(), want, 'every byte, in order');
      assert.ok(ms >= 150 + 2 * 10, `the first chunk stalled 150 ms and the rest waited behind it: ${ms} ms`);
      s.destroy();
    } finally {
      await p.close();
    }
  });

  test('bytesPerSecond queues chunks at the link rate', async () => {
    const p = await startTcpProxy({ host: '127.0.0.1', port: echoPort }, { shape: { bytesPerSecond: 400_000 } });
    try {
      const s = await open(p);
      const { back, ms } = await roundTrip(s, Buffer.alloc(100_000, 7));
      assert.equal(back.length, 100_000);
      // 100 kB at 400 kB/s is 250 ms each way, the echo's way back overlapping the way out.
      assert.ok(ms >= 250, `100 kB through a 400 kB/s link: ${ms} ms`);
      s.destroy();
    } finally {
      await p.close();
    }
  });

  test("cut('blackhole') answers nothing, new connections included; restore() resets the holed ones and lets new ones through", async () => {
    const p = await startTcpProxy({ host: '127.0.0.1', port: echoPort }, { shape: { delayMs: 5 } });
    try {
      const s = await open(p);
      await roundTrip(s, Buffer.from('before'));
      p.cut('blackhole');
      const silent = (sock: Socket) =>
        Promise.race([roundTrip(sock, Buffer.from('anyone?')).then(() => 'answered'), new Promise((r) => setTimeout(() => r('silent'), 300))]);
      assert.equal(await silent(s), 'silent');
      const during = await open(p); // the kernel accepts; nothing answers
      assert.equal(await silent(during), 'silent');
      const closed = (sock: Socket) => new Promise<void>((r) => (sock.destroyed ? r() : sock.once('close', () => r())));
      s.on('error', () => {});
      during.on('error', () => {});
      p.restore();
      await Promise.all([closed(s), closed(during)]);
      const fresh = await open(p);
      assert.equal((await roundTrip(fresh, Buffer.from('after'))).back.toString(), 'after');
      fresh.destroy();
    } finally {
      await p.close();
    }
  });

  test("cut() (reset) still resets live and new connections, shaped or not", async () => {
    for (const options of [{}, { shape: { delayMs: 5 } }]) {
      const p = await startTcpProxy({ host: '127.0.0.1', port: echoPort }, options);
      try {
        const s = await open(p);
        await roundTrip(s, Buffer.from('hello'));
        const reset = new Promise<string>((r) => s.once('error', (e: NodeJS.ErrnoException) => r(e.code ?? '')));
        p.cut();
        assert.equal(await reset, 'ECONNRESET');
        const refused = await open(p).then(
          (sock) => new Promise<string>((r) => sock.once('error', (e: NodeJS.ErrnoException) => r(e.code ?? '')).once('close', () => r('closed'))),
          (e: NodeJS.ErrnoException) => e.code ?? '',
        );
        assert.match(refused, /ECONNRESET|closed/);
        p.restore();
        const again = await open(p);
        assert.equal((await roundTrip(again, Buffer.from('again'))).back.toString(), 'again');
        again.destroy();
        assert.equal(p.accepted(), 2);
      } finally {
        await p.close();
      }
    }
  });

  test('a shaped connection carries a half-close: the upstream answers after the client ended its side', async () => {
    // The server answers once the request ends (as an HTTP/1.0 server would), then closes.
    const server = createServer({ allowHalfOpen: true }, (sock) => {
      const got: Buffer[] = [];
      sock.on('data', (d: Buffer) => got.push(d));
      sock.on('end', () => sock.end(`got ${Buffer.concat(got).toString()}`));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const p = await startTcpProxy({ host: '127.0.0.1', port: (server.address() as { port: number }).port }, { shape: { delayMs: 20 } });
    try {
      const s = connect({ port: p.port, host: '127.0.0.1', allowHalfOpen: true });
      const answer: Buffer[] = [];
      s.on('data', (d: Buffer) => answer.push(d));
      const ended = new Promise<void>((r) => s.once('end', () => r()));
      s.end('request');
      await ended;
      assert.equal(Buffer.concat(answer).toString(), 'got request');
      s.destroy();
    } finally {
      await p.close();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

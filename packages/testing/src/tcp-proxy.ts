/**
 * A TCP proxy for tests that cut a process off from a server (issue 14: a coordinator replica cut off from
 * PostgreSQL). It pipes every accepted connection to the upstream; `cut()` destroys the live connections and
 * drops new ones at once (the client sees a reset), `restore()` lets them through again.
 */
import { createServer, type Socket, connect } from 'node:net';

export interface TcpProxy {
  /** The loopback port to connect to instead of the upstream's. */
  port: number;
  /** Connections piped so far (live or not). */
  accepted(): number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(upstream: { host: string; port: number }): Promise<TcpProxy> {
  const live = new Set<Socket>();
  let isCut = false;
  let count = 0;
  const track = (s: Socket) => {
    live.add(s);
    s.on('close', () => live.delete(s));
    s.on('error', () => s.destroy());
  };
  const server = createServer((client) => {
    if (isCut) {
      client.resetAndDestroy();
      return;
    }
    count++;
    const up = connect(upstream.port, upstream.host);
    track(client);
    track(up);
    // Either side closing closes the other: the pair lives and dies together.
    client.on('close', () => up.destroy());
    up.on('close', () => client.destroy());
    client.pipe(up);
    up.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const addr = server.address();
  if (typeof addr !== 'object' || addr === null) throw new Error('tcp proxy: no port');
  return {
    port: addr.port,
    accepted: () => count,
    cut() {
      isCut = true;
      for (const s of live) s.resetAndDestroy();
    },
    restore() {
      isCut = false;
    },
    async close() {
      for (const s of live) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

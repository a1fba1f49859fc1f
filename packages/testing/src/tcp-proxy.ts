/**
 * A TCP proxy for tests that cut a process off from a server (issue 14: a coordinator replica cut off from
 * PostgreSQL). It pipes every accepted connection to the upstream; `cut()` destroys the live connections and
 * drops new ones at once (the client sees a reset), `restore()` lets them through again.
 *
 * Given a `shape`, it is also a user-space link shaper (issue 15: regions at a real distance, where the kernel has no
 * netem): each chunk read from one side is written to the other `delayMs` later, in order; with `bytesPerSecond`
 * chunks also queue behind each other at that rate. Loss is modelled as TCP shows it to the application: TCP never
 * loses bytes, a lost segment is retransmitted, so the reader sees a stall of about a retransmission timeout on
 * that chunk and everything behind it (head-of-line blocking). A `loss` fraction of chunks is therefore delivered
 * `lossPenaltyMs` late (default 200 ms, Linux's minimum RTO, plus one round trip), never dropped; resets are what a
 * partition does and are `cut()`'s. The TCP handshake itself is not delayed (the proxy accepts at once); the first
 * bytes are. `cut('blackhole')` is a silent partition: nothing is delivered and nothing answers, so clients time
 * out; `restore()` then resets the connections that lost bytes (a stream with a hole cannot go on).
 */
import { createServer, type Socket, connect } from 'node:net';
import { performance } from 'node:perf_hooks';

export interface LinkShape {
  /** One-way delay added to every chunk, each direction, in ms. */
  delayMs?: number;
  /** Fraction (0..1) of chunks that stand for a lost segment: delivered `lossPenaltyMs` late, order kept. */
  loss?: number;
  /** The stall of a "lost" chunk. Default 200 + 2 × delayMs (minimum RTO plus the retransmission's round trip). */
  lossPenaltyMs?: number;
  /** Link rate per direction; unset: unlimited. */
  bytesPerSecond?: number;
  /** Random draws in [0, 1) for loss (a parameter so a test can make it deterministic). Default Math.random. */
  random?: () => number;
}

export interface TcpProxyOptions {
  /** Address to listen on. Default 127.0.0.1 (a link shaper listens on a namespace uplink's root address). */
  host?: string;
  /** Port to listen on. Default 0: a free one. */
  port?: number;
  /** Shape the link (delay, loss, rate). Without it the proxy pipes bytes as they come. */
  shape?: LinkShape;
}

export type CutMode = 'reset' | 'blackhole';

export interface TcpProxy {
  /** The port to connect to instead of the upstream's. */
  port: number;
  /** The address it listens on. */
  host: string;
  /** Connections piped so far (live or not). */
  accepted(): number;
  /** Partition: 'reset' (default) resets live connections and new ones; 'blackhole' delivers nothing and answers nothing. */
  cut(mode?: CutMode): void;
  restore(): void;
  /** Change the shape of a shaping proxy; chunks read from now on get it (ones in flight keep theirs). */
  setShape(shape: LinkShape): void;
  close(): Promise<void>;
}

const HIGH_WATER = 1 << 20; // bytes in flight one way before the reading side is paused
const LOW_WATER = 1 << 18;

type Shape = LinkShape & { delayMs: number; loss: number; random: () => number };
type Item = { at: number; data?: Buffer; end?: true; reset?: true };

/** One direction of a shaped connection: chunks from `from` reach `to` when their time comes, in order. */
class ShapedDirection {
  private readonly queue: Item[] = [];
  private bytes = 0;
  private lastAt = 0;
  private linkFreeAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private paused = false;

  constructor(
    private readonly from: Socket,
    private readonly to: Socket,
    private readonly shape: () => Shape,
    private readonly dropping: () => boolean,
  ) {
    from.on('data', (chunk: Buffer) => this.push(chunk));
    from.on('end', () => this.enqueue({ at: this.nextAt(0, false), end: true }));
    // Closed without an orderly end (reset, error): the other side gets a reset, after what was in flight.
    from.on('close', () => {
      if (!from.readableEnded) this.enqueue({ at: this.nextAt(0, false), reset: true });
    });
  }

  private nextAt(size: number, mayLose: boolean): number {
    const s = this.shape();
    const now = performance.now();
    let sent = now;
    if (s.bytesPerSecond && size > 0) {
      this.linkFreeAt = Math.max(now, this.linkFreeAt) + (size * 1000) / s.bytesPerSecond;
      sent = this.linkFreeAt;
    }
    let at = sent + s.delayMs;
    if (mayLose && s.loss > 0 && s.random() < s.loss) at += s.lossPenaltyMs ?? 200 + 2 * s.delayMs;
    this.lastAt = Math.max(at, this.lastAt);
    return this.lastAt;
  }

  private push(chunk: Buffer): void {
    if (this.dropping()) return; // a blackholed link: the bytes are gone (restore() resets this connection)
    this.bytes += chunk.length;
    this.enqueue({ at: this.nextAt(chunk.length, true), data: chunk });
    if (this.bytes > HIGH_WATER && !this.paused) {
      this.paused = true;
      this.from.pause();
    }
  }

  private enqueue(item: Item): void {
    this.queue.push(item);
    if (!this.timer) this.schedule();
  }

  private schedule(): void {
    const head = this.queue[0];
    if (!head) return;
    this.timer = setTimeout(() => this.deliver(), Math.max(0, Math.ceil(head.at - performance.now())));
  }

  private deliver(): void {
    this.timer = undefined;
    const now = performance.now();
    while (this.queue.length > 0 && (this.queue[0] as Item).at <= now) {
      const item = this.queue.shift() as Item;
      if (item.data) this.bytes -= item.data.length;
      if (this.dropping()) continue;
      if (item.data) {
        if (!this.to.destroyed) this.to.write(item.data);
      } else if (item.end) {
        if (!this.to.destroyed) this.to.end();
      } else if (item.reset && !this.to.destroyed) this.to.resetAndDestroy();
    }
    if (this.paused && this.bytes < LOW_WATER) {
      this.paused = false;
      this.from.resume();
    }
    this.schedule();
  }

  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
    this.bytes = 0;
  }
}

export async function startTcpProxy(upstream: { host: string; port: number }, options: TcpProxyOptions = {}): Promise<TcpProxy> {
  const live = new Set<Socket>();
  let cutMode: CutMode | null = null;
  let count = 0;
  const shaped = options.shape !== undefined;
  let shape: Shape = { delayMs: 0, loss: 0, random: Math.random, ...options.shape };
  const pairs = new Set<Pair>();
  const reset = (s: Socket) => s.destroyed || s.resetAndDestroy();
  const track = (s: Socket) => {
    live.add(s);
    s.on('close', () => live.delete(s));
    s.on('error', () => s.destroy());
  };
  const server = createServer({ allowHalfOpen: shaped }, (client) => {
    if (cutMode === 'reset') {
      client.resetAndDestroy();
      return;
    }
    if (cutMode === 'blackhole') {
      // Accepted by the kernel already; nothing will ever answer. restore() resets it.
      track(client);
      const pair: Pair = { client, holed: true };
      pairs.add(pair);
      client.on('close', () => pairs.delete(pair));
      client.resume();
      return;
    }
    count++;
    const up = connect({ port: upstream.port, host: upstream.host, allowHalfOpen: shaped });
    track(client);
    track(up);
    const pair: Pair = { client, up, holed: false };
    pairs.add(pair);
    const dropping = () => {
      if (cutMode !== 'blackhole') return false;
      pair.holed = true;
      return true;
    };
    if (shaped) {
      // Each side's data, end or reset reaches the other in order, when its time comes.
      pair.directions = [new ShapedDirection(client, up, () => shape, dropping), new ShapedDirection(up, client, () => shape, dropping)];
    } else {
      // Either side closing closes the other: the pair lives and dies together.
      client.on('close', () => up.destroy());
      up.on('close', () => client.destroy());
      client.pipe(up);
      up.pipe(client);
    }
    const forget = () => {
      if (!client.destroyed || !up.destroyed) return;
      for (const d of pair.directions ?? []) d.clear();
      pairs.delete(pair);
    };
    client.on('close', forget);
    up.on('close', forget);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address();
  if (typeof addr !== 'object' || addr === null) throw new Error('tcp proxy: no port');
  return {
    port: addr.port,
    host: addr.address,
    accepted: () => count,
    cut(mode = 'reset') {
      cutMode = mode;
      if (mode === 'reset') {
        for (const p of pairs) for (const d of p.directions ?? []) d.clear();
        for (const s of live) reset(s);
        return;
      }
      for (const p of pairs) {
        if (p.directions || !p.up) continue;
        // An unshaped pair stops piping; its bytes from now on are dropped.
        p.holed = true;
        p.client.unpipe(p.up);
        p.up.unpipe(p.client);
        p.client.resume();
        p.up.resume();
      }
    },
    restore() {
      cutMode = null;
      for (const p of pairs) {
        if (!p.holed) continue;
        reset(p.client);
        if (p.up) reset(p.up);
      }
    },
    setShape(next) {
      if (!shaped) throw new Error('tcp proxy: setShape needs a proxy started with a shape');
      shape = { delayMs: 0, loss: 0, random: Math.random, ...next };
    },
    async close() {
      for (const p of pairs) for (const d of p.directions ?? []) d.clear();
      for (const s of live) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One proxied connection: the client's socket, the upstream's (none for one accepted while blackholed). */
interface Pair {
  client: Socket;
  up?: Socket;
  directions?: ShapedDirection[];
  /** Lost bytes to a blackhole: reset at restore(). */
  holed: boolean;
}

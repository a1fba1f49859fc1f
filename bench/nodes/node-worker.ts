/**
 * One load-generator process of `bench:nodes`: thousands of lightweight simulated nodes. Not the agent: each
 * node is an ed25519 key, one signed registration (the trace's fleet mix) and then signed heartbeats at the
 * interval with jitter, over keep-alive HTTP with a bounded socket count. A node sends one heartbeat at a
 * time, as the agent does; it does not long-poll for work or run jobs. Driven by the parent over IPC.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { Agent, request } from 'node:http';
import { pickFleet, seededRandom, simulatedAdvertisement } from '@gpux/agent';
import { nodeIdFromPublicKey, rawPublicKey, ROUTES, signRequest } from '@gpux/protocol';
import type { AddResult, FromWorker, ToWorker, WindowResult, WorkerInit } from './protocol.js';

interface SimNode {
  nodeId: string;
  key: KeyObject;
  url: number;
  inFlight: boolean;
  lastRttMs: number | undefined;
}

const TICK_MS = 10;
let init: WorkerInit;
let agents: Agent[] = [];
const nodes: SimNode[] = [];
/** Due heartbeats by slot (floor(due ÷ TICK_MS)): a timer wheel, so 25,000 nodes cost one timer. */
const slots = new Map<number, number[]>();
let nextSlot = Math.floor(performance.now() / TICK_MS);
let ticker: NodeJS.Timeout | undefined;
let win = freshWindow();

function freshWindow() {
  return { latencies: [] as number[], lags: [] as number[], sent: 0, ok: 0, errors: {} as Record<string, number>, skipped: 0, cpu: process.cpuUsage(), t0: performance.now() };
}

function send(msg: FromWorker): void {
  process.send?.(msg);
}

function post(n: SimNode, path: string, body: string): Promise<{ status: number; text: string }> {
  const headers = signRequest({ method: 'POST', path, body, nodeId: n.nodeId }, n.key);
  const url = new URL(init.urls[n.url] as string);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: 'POST',
        agent: agents[n.url],
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        timeout: init.timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
    req.on('error', reject);
    req.end(body);
  });
}

function schedule(i: number, due: number): void {
  // Never into a slot the wheel has passed: it would not fire.
  const slot = Math.max(nextSlot, Math.floor(due / TICK_MS));
  const list = slots.get(slot);
  if (list) list.push(i);
  else slots.set(slot, [i]);
}

function nextWait(): number {
  return init.intervalMs * (1 + (Math.random() * 2 - 1) * init.jitter);
}

function heartbeat(i: number, due: number): void {
  const n = nodes[i] as SimNode;
  schedule(i, due + nextWait());
  if (n.inFlight) {
    win.skipped++;
    return;
  }
  n.inFlight = true;
  const body = JSON.stringify({ activeAttemptIds: [], ...(n.lastRttMs === undefined ? {} : { rttMs: n.lastRttMs }) });
  const t0 = performance.now();
  win.lags.push(t0 - due);
  win.sent++;
  const w = win;
  post(n, ROUTES.heartbeat.path, body).then(
    (res) => {
      const ms = performance.now() - t0;
      n.inFlight = false;
      n.lastRttMs = Math.round(ms);
      if (w !== win) return;
      if (res.status === 200) {
        w.ok++;
        w.latencies.push(Math.round(ms * 100) / 100);
      } else {
        w.errors[`HTTP ${res.status}`] = (w.errors[`HTTP ${res.status}`] ?? 0) + 1;
      }
    },
    (err: NodeJS.ErrnoException) => {
      n.inFlight = false;
      if (w !== win) return;
      const kind = err.code ?? err.message;
      w.errors[kind] = (w.errors[kind] ?? 0) + 1;
    },
  );
}

function tick(): void {
  const nowSlot = Math.floor(performance.now() / TICK_MS);
  for (; nextSlot <= nowSlot; nextSlot++) {
    const due = slots.get(nextSlot);
    if (!due) continue;
    slots.delete(nextSlot);
    for (const i of due) heartbeat(i, nextSlot * TICK_MS);
  }
}

async function add(msg: Extract<ToWorker, { cmd: 'add' }>): Promise<AddResult> {
  const t0 = performance.now();
  const shapes = pickFleet(init.fleetSize, seededRandom(init.seed));
  const result: AddResult = { registered: 0, failed: 0, errors: [], ms: 0 };
  let next = 0;
  const one = async (i: number) => {
    const pair = generateKeyPairSync('ed25519');
    const publicKey = rawPublicKey(pair.publicKey);
    const n: SimNode = { nodeId: nodeIdFromPublicKey(publicKey), key: pair.privateKey, url: i % init.urls.length, inFlight: false, lastRttMs: undefined };
    const shape = shapes[i % shapes.length];
    if (!shape) throw new Error(`no fleet shape for node ${i}`);
    const advertisement = simulatedAdvertisement(i, shape, n.nodeId);
    const body = JSON.stringify({ publicKey, advertisement, ...(msg.enrollmentToken ? { enrollmentToken: msg.enrollmentToken } : {}) });
    try {
      const res = await post(n, ROUTES.register.path, body);
      if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${res.text.slice(0, 300)}`);
    } catch (e) {
      result.failed++;
      if (result.errors.length < 5) result.errors.push((e as Error).message);
      return;
    }
    result.registered++;
    const idx = nodes.push(n) - 1;
    // The agent heartbeats right after registering, then every interval: start at a random phase instead,
    // so the ramp does not synchronize the fleet into bursts.
    schedule(idx, performance.now() + Math.random() * init.intervalMs);
  };
  const worker = async () => {
    for (let k = next++; k < msg.indices.length; k = next++) await one(msg.indices[k] as number);
  };
  await Promise.all(Array.from({ length: Math.min(msg.concurrency, msg.indices.length) }, worker));
  result.ms = Math.round(performance.now() - t0);
  return result;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

function collect(): WindowResult {
  const w = win;
  win = freshWindow();
  const cpu = process.cpuUsage(w.cpu);
  const lags = w.lags.sort((a, b) => a - b);
  return {
    latencies: w.latencies,
    lagP99: Math.round(percentile(lags, 99) * 10) / 10,
    sent: w.sent,
    ok: w.ok,
    errors: w.errors,
    skipped: w.skipped,
    cpuMs: (cpu.user + cpu.system) / 1000,
    wallMs: performance.now() - w.t0,
    rssBytes: process.memoryUsage().rss,
  };
}

process.on('message', (msg: ToWorker) => {
  switch (msg.cmd) {
    case 'init':
      init = msg;
      agents = msg.urls.map(() => new Agent({ keepAlive: true, maxSockets: msg.maxSockets }));
      ticker = setInterval(tick, TICK_MS);
      send({ reply: 'ready' });
      break;
    case 'add':
      add(msg).then((result) => send({ reply: 'added', result }));
      break;
    case 'mark':
      win = freshWindow();
      send({ reply: 'marked' });
      break;
    case 'collect':
      send({ reply: 'window', result: collect() });
      break;
    case 'stop':
      if (ticker) clearInterval(ticker);
      for (const a of agents) a.destroy();
      send({ reply: 'stopped' });
      setTimeout(() => process.exit(0), 50).unref();
      break;
  }
});
process.on('disconnect', () => process.exit(0));

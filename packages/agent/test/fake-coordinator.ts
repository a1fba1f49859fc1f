/**
 * Test helper: a small coordinator over node:http (or https) that speaks the agent API and seals with a test key
 * (coordinator-seal.ts). Tests put assignments and cancels in, and read back what the agent did (starts,
 * refusals, results, identity reads). It answers whatever it is told, sealed or not: the agent must judge.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { type Assignment, type CoordinatorKey, type ResultReport, type Seal, type SealedCancel, SIGNATURE_HEADERS } from '@gpux/protocol';
import { chainLink, registrationAnswer, type TestCoordinatorKey, testKey } from './coordinator-seal.js';

export interface FakeCoordinatorOptions {
  /** The key registration answers are signed with. Default testKey. */
  key?: TestCoordinatorKey;
  /** Serve https with this certificate and key (PEM files). */
  tls?: { cert: string; key: string };
}

export class FakeCoordinator {
  url = '';
  /** Signs registration answers; `chain` is what GET /v1/coordinator/identity shows. */
  key: TestCoordinatorKey;
  chain: CoordinatorKey[];
  /** Delivered by every work poll until started or refused (as the real coordinator re-delivers). */
  pending: Assignment[] = [];
  heartbeatCancel: SealedCancel[] = [];
  /** Answer start / log batches with cancel: true and this seal (null: no cancel). */
  startCancel: { seal?: Seal } | null = null;
  logsCancel: { seal?: Seal } | null = null;
  nodeId = '';
  nodePublicKey = '';
  readonly started: string[] = [];
  readonly refused: { attemptId: string; reason: string }[] = [];
  readonly results: { attemptId: string; report: ResultReport }[] = [];
  registrations = 0;
  heartbeats = 0;
  /** Answer registrations without the coordinator block (an older or fake coordinator). */
  anonymousRegistration = false;
  identityReads = 0;
  private server: http.Server | null = null;

  constructor(opts: FakeCoordinatorOptions = {}) {
    this.key = opts.key ?? testKey;
    this.chain = [chainLink(this.key, null)];
    this.tls = opts.tls;
  }

  private readonly tls: { cert: string; key: string } | undefined;

  async listen(t: { after(fn: () => unknown): void }): Promise<this> {
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        void this.answer(req, text ? JSON.parse(text) : undefined).then(([status, body]) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        });
      });
    };
    this.server = this.tls ? https.createServer({ cert: readFileSync(this.tls.cert), key: readFileSync(this.tls.key) }, handler) : http.createServer(handler);
    const server = this.server;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.after(() => {
      server.closeAllConnections(); // the agent's long-poll and keep-alive connections would hold close() open
      return new Promise((r) => server.close(r));
    });
    this.url = `${this.tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  private async answer(req: http.IncomingMessage, body: unknown): Promise<[number, unknown]> {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    const attempt = /^\/v1\/agent\/attempts\/([^/]+)\/(\w+)$/.exec(path);
    if (path === '/v1/coordinator/identity') {
      this.identityReads++;
      return [200, { signingKey: this.key.keyId, keys: this.chain }];
    }
    if (path === '/v1/agent/register') {
      this.registrations++;
      this.nodeId = String(req.headers[SIGNATURE_HEADERS.node]);
      this.nodePublicKey = (body as { publicKey: string }).publicKey;
      const { coordinator, ...bare } = registrationAnswer({ nodeId: this.nodeId, publicKey: this.nodePublicKey }, this.key);
      return [200, this.anonymousRegistration ? bare : { ...bare, coordinator }];
    }
    if (path === '/v1/agent/heartbeat') {
      this.heartbeats++;
      return [200, { cancel: this.heartbeatCancel, heartbeatIntervalMs: 100, serverTime: Date.now() }];
    }
    if (path === '/v1/agent/work') {
      if (this.pending.length === 0) await new Promise((r) => setTimeout(r, 50));
      return [200, { assignments: this.pending }];
    }
    if (attempt) {
      const [, rawId, action] = attempt;
      const id = decodeURIComponent(rawId ?? '');
      const drop = () => {
        this.pending = this.pending.filter((a) => a.attemptId !== id);
      };
      if (action === 'start') {
        this.started.push(id);
        drop();
        return [200, { ok: true, cancel: this.startCancel !== null, ...(this.startCancel?.seal ? { cancelSeal: this.startCancel.seal } : {}) }];
      }
      if (action === 'refuse') {
        this.refused.push({ attemptId: id, reason: (body as { reason: string }).reason });
        drop();
        return [200, { ok: true, ended: true }];
      }
      if (action === 'logs') {
        const c = this.logsCancel;
        return [200, { accepted: (body as { entries: unknown[] }).entries.length, cancel: c !== null, ...(c?.seal ? { cancelSeal: c.seal } : {}) }];
      }
      if (action === 'events') return [200, { accepted: (body as { events: unknown[] }).events.length }];
      if (action === 'result') {
        this.results.push({ attemptId: id, report: body as ResultReport });
        return [200, { accepted: true, duplicate: false }];
      }
    }
    return [404, { error: { code: 'NOT_FOUND', message: `no route ${req.method} ${path}` } }];
  }
}

/** Polls `fn` until it returns something other than undefined (no sleeps as synchronisation). */
export async function until<V>(what: string, fn: () => V | undefined, timeoutMs = 15_000): Promise<V> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

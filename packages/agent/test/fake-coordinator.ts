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
  /** No work exchange (an older coordinator): POST /v1/agent/work is 404, attempts start one by one. */
  noWorkExchange = false;
  /** Work exchanges that carried starts, each with the ids it carried; and starts sent on their own (POST …/start). */
  readonly exchanges: string[][] = [];
  explicitStarts = 0;
  /** Carried starts answered refused (the attempt ended meanwhile); exchanges carrying starts answered 503 before one is taken. */
  readonly refuseStarts = new Set<string>();
  failExchanges = 0;
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
    if (path === '/v1/agent/work' && req.method === 'POST') {
      if (this.noWorkExchange) return [404, { error: { code: 'NOT_FOUND', message: `no route POST ${path}` } }];
      const carried = (body as { started: string[] }).started;
      if (carried.length > 0) this.exchanges.push(carried);
      if (carried.length > 0 && this.failExchanges > 0) {
        this.failExchanges--;
        return [503, { error: { code: 'UNAVAILABLE', message: 'failing on purpose' } }];
      }
      const refused = (id: string) => ({ attemptId: id, ok: false, error: { code: 'CONFLICT', message: `attempt ${id} is lost, no longer active` } });
      const started = carried.map((id) => (this.refuseStarts.has(id) ? refused(id) : { attemptId: id, ...this.start(id) }));
      if (carried.length === 0 && this.pending.length === 0) await new Promise((r) => setTimeout(r, 50));
      return [200, { assignments: this.pending, started }];
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
        this.explicitStarts++;
        return [200, this.start(id)];
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

  /** A start, on its own or carried by a work exchange: recorded, no longer delivered. */
  private start(id: string): { ok: true; cancel: boolean; cancelSeal?: Seal } {
    this.started.push(id);
    this.pending = this.pending.filter((a) => a.attemptId !== id);
    return { ok: true, cancel: this.startCancel !== null, ...(this.startCancel?.seal ? { cancelSeal: this.startCancel.seal } : {}) };
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

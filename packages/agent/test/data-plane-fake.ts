/**
 * Test helper: a small coordinator over node:http with just what an attempt needs (start, logs, events, result)
 * plus the data-plane routes of issue 13 (blob inputs with Range, output and checkpoint uploads in chunks with
 * tokens, the checkpoint a retry starts from). Faults
 * are switches: cut a download or an upload chunk after some bytes, send wrong or extra bytes.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { seededRandom, systemClock } from '@gpux/core';
import { generateNodeKeyPair, nodeIdFromPublicKey, publicKeyFromRaw, type ResultReport, SIGNATURE_HEADERS, verifySignature } from '@gpux/protocol';
import type { X25519KeyPair } from '@gpux/protocol/e2e';
import { CoordinatorClient } from '../src/coordinator-client.js';
import { ProcessExecutor, silentLogger } from '../src/index.js';
import type { AttemptContext } from '../src/loop/attempt-runner.js';
import { tempDir } from './helpers.js';

export interface FakeUpload {
  id: string;
  token: string;
  path: string;
  sha256: string;
  size: number;
  data: Buffer;
  done: boolean;
  kind: 'output' | 'checkpoint';
  attemptId: string;
}

export class DataPlaneFake {
  url = '';
  /** Blob inputs by sha256: what GET .../inputs/:sha256 serves. */
  readonly blobs = new Map<string, Buffer>();
  /** Cut the next N input downloads after this many bytes (the socket destroyed mid-body). */
  cutDownloadsAfter: { bytes: number; times: number } | null = null;
  /** Send this many bytes of an input, then nothing more (the connection held open). */
  stallDownloadsAfter: number | null = null;
  /** Ignore Range headers (answer 200 with the whole blob). */
  ignoreRange = false;
  /** Cut the next N upload chunks after this many bytes of the chunk landed. */
  cutChunksAfter: { bytes: number; times: number } | null = null;
  chunkBytes = 64 * 1024;
  /** Blobs the server already holds (an output upload for one answers at once). */
  readonly stored = new Set<string>();
  private readonly storedData = new Map<string, Buffer>();
  readonly uploads = new Map<string, FakeUpload>();
  /** What GET .../checkpoint serves (the assignment names its sha256). */
  checkpoint: Buffer | null = null;
  /** Checkpoint uploads that completed, in order (an already stored one too). */
  readonly checkpoints: { attemptId: string; sha256: string; data: Buffer }[] = [];
  /** What happened, in order: "checkpoint <sha256>" when one completes, "result <attemptId>". */
  readonly order: string[] = [];
  /** Answer checkpoint upload opens with this status (a failing coordinator), while > 0 times. */
  failCheckpointOpens: { status: number; times: number } | null = null;
  readonly results: { attemptId: string; report: ResultReport }[] = [];
  readonly rangeRequests: string[] = [];
  readonly badSignatures: string[] = [];
  chunkPuts = 0;
  /** GET /v1/agent/uploads/:id: how often an uploader asked where to resume. */
  statusReads = 0;
  /** Encrypted jobs (issue 13): the wrapped data key GET .../key serves per attempt (none: 404 KEY_NOT_RELEASED). */
  readonly dataKeys = new Map<string, { wrappedKey: string; scope: 'attempt' | 'job'; jobId: string }>();
  /** Output keys announced (POST .../output-key), refusals (POST .../refuse), log entries received, per attempt. */
  readonly outputKeys = new Map<string, string>();
  readonly refusals: { attemptId: string; reason: string }[] = [];
  readonly logEntries: { attemptId: string; seq: number; stream: 'stdout' | 'stderr' | 'system'; data: string }[] = [];
  /** Encrypted jobs, in order: "output-key <attemptId>", the first "logs <attemptId>". */
  readonly e2eOrder: string[] = [];
  /** Attempts that were started (POST .../start). */
  readonly started: string[] = [];
  /** The node's public key (base64 raw), to check signatures on input downloads. */
  nodePublicKey = '';
  async listen(t: { after(fn: () => unknown): void }): Promise<this> {
    const server = http.createServer((req, res) => void this.route(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.after(() => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    });
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  addBlob(data: Buffer): string {
    const sha = createHash('sha256').update(data).digest('hex');
    this.blobs.set(sha, data);
    return sha;
  }

  private async route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const input = /^\/v1\/agent\/attempts\/[^/]+\/inputs\/([0-9a-f]{64})$/.exec(path);
    if (req.method === 'GET' && input) return this.serveInput(req, res, this.blobs.get(input[1] as string));
    if (req.method === 'GET' && /^\/v1\/agent\/attempts\/[^/]+\/checkpoint$/.test(path)) return this.serveInput(req, res, this.checkpoint ?? undefined);
    const upload = /^\/v1\/agent\/uploads\/([^/]+)$/.exec(path);
    if (upload) return this.serveUpload(req, res, decodeURIComponent(upload[1] as string));
    const body = await readBody(req);
    const attempt = /^\/v1\/agent\/attempts\/([^/]+)\/([\w-]+)$/.exec(path);
    const id = decodeURIComponent(attempt?.[1] ?? '');
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    const parsed = body.length ? JSON.parse(body.toString('utf8')) : undefined;
    switch (attempt?.[2]) {
      case 'start':
        this.started.push(id);
        return json(200, { ok: true, cancel: false });
      case 'logs':
        if (!this.e2eOrder.includes(`logs ${id}`)) this.e2eOrder.push(`logs ${id}`);
        for (const e of parsed.entries) this.logEntries.push({ attemptId: id, seq: e.seq, stream: e.stream, data: e.data });
        return json(200, { accepted: parsed.entries.length, cancel: false });
      case 'key': {
        const k = this.dataKeys.get(id);
        if (!k) return json(404, { error: { code: 'KEY_NOT_RELEASED', message: `no data key released yet for attempt ${id}` } });
        return json(200, { attemptId: id, ...k });
      }
      case 'output-key':
        this.outputKeys.set(id, parsed.wrappedKey);
        this.e2eOrder.push(`output-key ${id}`);
        return json(200, { ok: true, stored: true });
      case 'refuse':
        this.refusals.push({ attemptId: id, reason: parsed.reason });
        return json(200, { ok: true, ended: true });
      case 'events':
        return json(200, { accepted: parsed.events.length });
      case 'result':
        this.results.push({ attemptId: id, report: parsed });
        this.order.push(`result ${id}`);
        return json(200, { accepted: true, duplicate: false });
      case 'outputs':
      case 'checkpoints': {
        const kind = attempt?.[2] === 'outputs' ? 'output' : 'checkpoint';
        const { path: p = '', sha256, size } = parsed as { path?: string; sha256: string; size: number };
        const fail = kind === 'checkpoint' ? this.failCheckpointOpens : null;
        if (fail && fail.times > 0) {
          fail.times--;
          return json(fail.status, { error: { code: 'UNAVAILABLE', message: 'failing on purpose' } });
        }
        if (this.stored.has(sha256)) {
          if (kind === 'checkpoint') this.addCheckpoint(id, sha256, this.storedData.get(sha256) ?? Buffer.alloc(0));
          return json(200, { ...this.view(null, sha256, size, size, true), uploadToken: null });
        }
        const up: FakeUpload = { id: `up_${randomBytes(4).toString('hex')}`, token: randomBytes(16).toString('hex'), path: p, sha256, size, data: Buffer.alloc(0), done: false, kind, attemptId: id };
        this.uploads.set(up.id, up);
        return json(200, { ...this.view(up.id, sha256, size, 0, false), uploadToken: up.token });
      }
      default:
        return json(404, { error: { code: 'NOT_FOUND', message: `no route ${req.method} ${path}` } });
    }
  }

  private addCheckpoint(attemptId: string, sha256: string, data: Buffer): void {
    this.checkpoints.push({ attemptId, sha256, data });
    this.order.push(`checkpoint ${sha256}`);
  }

  private view(id: string | null, sha256: string, size: number, offset: number, done: boolean) {
    const blob = done ? { sha256, size, createdAt: 1, lastReferencedAt: 1, expiresAt: 2 } : null;
    return { uploadId: id, sha256, size, offset, expiresAt: done ? null : Date.now() + 60_000, chunkBytes: this.chunkBytes, blob };
  }

  private serveInput(req: http.IncomingMessage, res: http.ServerResponse, data: Buffer | undefined): void {
    const path = req.url ?? '';
    const sig = req.headers[SIGNATURE_HEADERS.signature];
    const signed = {
      method: 'GET',
      path,
      body: '',
      nodeId: String(req.headers[SIGNATURE_HEADERS.node]),
      timestamp: Number(req.headers[SIGNATURE_HEADERS.timestamp]),
      nonce: String(req.headers[SIGNATURE_HEADERS.nonce]),
    };
    if (!this.nodePublicKey || typeof sig !== 'string' || !verifySignature(signed, sig, publicKeyFromRaw(this.nodePublicKey))) {
      this.badSignatures.push(path);
      res.writeHead(401, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ error: { code: 'UNAUTHORIZED', message: 'bad signature' } }));
    }
    if (!data) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ error: { code: 'NOT_FOUND', message: 'no such input' } }));
    }
    const range = /^bytes=(\d+)-$/.exec(String(req.headers.range ?? ''));
    let start = 0;
    if (range && !this.ignoreRange) {
      start = Number(range[1]);
      this.rangeRequests.push(String(req.headers.range));
      res.writeHead(206, { 'content-type': 'application/octet-stream', 'content-length': data.length - start, 'content-range': `bytes ${start}-${data.length - 1}/${data.length}` });
    } else res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': data.length });
    if (this.stallDownloadsAfter !== null) return void res.write(data.subarray(start, start + this.stallDownloadsAfter));
    const cut = this.cutDownloadsAfter;
    if (cut && cut.times > 0) {
      cut.times--;
      // Half the rest, then the connection dies.
      res.write(data.subarray(start, Math.min(data.length, start + cut.bytes)), () => res.socket?.destroy());
      return;
    }
    res.end(data.subarray(start));
  }

  private async serveUpload(req: http.IncomingMessage, res: http.ServerResponse, id: string): Promise<void> {
    const json = (status: number, value: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(value));
    };
    const up = this.uploads.get(id);
    if (!up || req.headers['x-gpux-upload-token'] !== up.token) {
      await readBody(req).catch(() => {});
      return json(401, { error: { code: 'UNAUTHORIZED', message: 'bad upload token' } });
    }
    if (req.method === 'GET') this.statusReads++;
    if (req.method === 'GET') return json(200, this.view(up.id, up.sha256, up.size, up.data.length, up.done));
    const offset = Number(req.headers['upload-offset']);
    if (offset !== up.data.length) {
      await readBody(req).catch(() => {});
      return json(409, { error: { code: 'CONFLICT', message: 'wrong offset' } }, { 'upload-offset': String(up.data.length) });
    }
    this.chunkPuts++;
    const cut = this.cutChunksAfter;
    let cutHere: number | null = null;
    if (cut && cut.times > 0) {
      cut.times--;
      cutHere = cut.bytes;
    }
    let got = 0;
    await new Promise<void>((resolve) => {
      req.on('data', (c: Buffer) => {
        if (cutHere !== null && got + c.length >= cutHere) {
          // Keep what landed before the cut, as a real server would, then drop the connection.
          up.data = Buffer.concat([up.data, c.subarray(0, cutHere - got)]);
          got = cutHere;
          req.socket.destroy();
          return resolve();
        }
        up.data = Buffer.concat([up.data, c]);
        got += c.length;
      });
      req.on('end', () => resolve());
      req.on('error', () => resolve());
      req.on('close', () => resolve());
    });
    if (req.socket.destroyed) return;
    if (got > this.chunkBytes) return json(413, { error: { code: 'BODY_TOO_LARGE', message: 'chunk too large' } });
    if (up.data.length === up.size) {
      const sha = createHash('sha256').update(up.data).digest('hex');
      if (sha !== up.sha256) return json(400, { error: { code: 'REQUEST_INVALID', message: 'digest mismatch' } });
      up.done = true;
      this.stored.add(sha);
      this.storedData.set(sha, up.data);
      if (up.kind === 'checkpoint') this.addCheckpoint(up.attemptId, sha, up.data);
    }
    json(200, this.view(up.id, up.sha256, up.size, up.data.length, up.done));
  }
}

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * A node (fresh identity, process executor in a temp work root) whose attempts talk to `fake`: the context the
 * data-plane, checkpoint and encryption tests run AttemptRunners with. `ctx` overrides or adds context fields.
 */
export async function nodeOnFake(
  t: { after(fn: () => unknown): void },
  o: { fake?: DataPlaneFake; prefix: string; encryption?: X25519KeyPair; killGraceMs?: number; ctx?: Partial<AttemptContext> },
) {
  const fake = o.fake ?? (await new DataPlaneFake().listen(t));
  const pair = generateNodeKeyPair();
  const identity = { nodeId: nodeIdFromPublicKey(pair.publicKey), ...pair, ...(o.encryption ? { encryption: o.encryption } : {}) };
  fake.nodePublicKey = identity.publicKey;
  const client = new CoordinatorClient({ baseUrl: fake.url, identity });
  const workRoot = await tempDir(t, o.prefix);
  const ctx: AttemptContext = {
    client,
    executor: new ProcessExecutor({ allowUnsafe: true, workRoot, ...(o.killGraceMs === undefined ? {} : { killGraceMs: o.killGraceMs }) }),
    clock: systemClock,
    random: seededRandom(1),
    logger: silentLogger,
    gpuUuids: () => [],
    giveUpAt: () => null,
    stopping: new AbortController().signal,
    checkCancel: async () => true,
    transfer: { retryDelayMs: 10 },
    ...o.ctx,
  };
  return { fake, client, ctx, workRoot };
}

/**
 * Test helpers: a real coordinator on 127.0.0.1:0 over SQLite in a temp dir, an HTTP client, a signed fake
 * agent. Every harness has a provider account (`provider`, its bearer token) with an enrollment token
 * (`enrollment`) that TestAgents of the harness's URL register with unless told otherwise.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '@gpux/core';
import {
  type Assignment,
  generateNodeKeyPair,
  type JobSpecInput,
  type LogEntry,
  type NodeAdvertisementInput,
  nodeIdFromPublicKey,
  outputRootDigest,
  type ResultReport,
  sha256Hex,
  signRequest,
  WorkResponse,
} from '@gpux/protocol';
import { type CoordinatorConfig, loadCoordinatorConfig } from '../src/config.js';
import { type RunningCoordinator, type StartOptions, startCoordinator } from '../src/start.js';
import { ENROLLMENT_TOKEN_PREFIX, issueEnrollment, issueToken } from '../src/tokens.js';
import { cryptoRandom } from '../src/random.js';
import { completeReport, type KnownAssignment, placeholderCommitment, UNSIGNED } from './commitment-helpers.js';

export interface Harness {
  dir: string;
  coord: RunningCoordinator;
  url: string;
  operator: string;
  /** Bearer token of the harness's provider account (owns the TestAgents' nodes; stakes them). */
  provider: string;
  providerId: string;
  /** An enrollment token of the provider: TestAgents of this harness register with it by default. */
  enrollment: string;
  /** A fresh buyer token each call. */
  buyer(): Promise<string>;
  /** Close and start again on the same database file. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export async function startHarness(overrides: Partial<CoordinatorConfig> = {}, opts: StartOptions = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'gpux-coord-test-'));
  // Tests register many fake nodes from one provider, and play many refused credentials from 127.0.0.1: the
  // per-provider rate and the per-address auth-failure limit are lifted unless a test sets them.
  const config = loadCoordinatorConfig({}, { dataDir: dir, host: '127.0.0.1', port: 0, logLevel: 'silent', market: false, verify: false, canaryRate: 0, registerRatePerMin: 1_000_000, authFailuresPerMinute: 1_000_000, challenge: 'off', ...overrides });
  const h: Harness = {
    dir,
    coord: await startCoordinator(config, opts),
    url: '',
    operator: '',
    provider: '',
    providerId: '',
    enrollment: '',
    buyer: async () => (await issueToken(h.coord.store, { role: 'buyer', name: 'buyer' }, systemClock, cryptoRandom)).token,
    restart: async () => {
      await h.coord.close();
      h.coord = await startCoordinator({ ...config, port: h.coord.port }, opts);
      h.url = h.coord.url;
      defaultEnrollments.set(h.url, h.enrollment);
    },
    close: async () => {
      defaultEnrollments.delete(h.url);
      await h.coord.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  h.url = h.coord.url;
  assert(h.coord.bootstrapOperatorToken, 'a fresh database gets a bootstrap operator token');
  h.operator = h.coord.bootstrapOperatorToken;
  const provider = await issueToken(h.coord.store, { role: 'buyer', name: 'provider' }, systemClock, cryptoRandom);
  h.provider = provider.token;
  h.providerId = provider.accountId;
  h.enrollment = (await issueEnrollment(h.coord.store, { accountId: provider.accountId, name: 'test-nodes' }, systemClock, cryptoRandom)).token;
  defaultEnrollments.set(h.url, h.enrollment);
  return h;
}

/** The enrollment token TestAgents use by default, by coordinator URL (set by startHarness). */
const defaultEnrollments = new Map<string, string>();
/** Enrollment tokens made for bearer tokens passed to TestAgent.register, by URL and bearer token. */
const enrollmentsByBearer = new Map<string, Promise<string>>();

/**
 * An enrollment token for `token`: itself when it is one; for a bearer token, an enrollment of that
 * token's account (made once through the API); anything else is sent as given (and refused).
 */
export function enrollmentFor(url: string, token: string): Promise<string> {
  if (token.startsWith(ENROLLMENT_TOKEN_PREFIX)) return Promise.resolve(token);
  const key = `${url} ${token}`;
  let p = enrollmentsByBearer.get(key);
  if (!p) {
    p = call(url, 'POST', '/v1/enrollments', { token, body: { name: 'test-agent' } }).then((r) => (r.status === 201 ? (r.body.token as string) : token));
    enrollmentsByBearer.set(key, p);
  }
  return p;
}

function assert(v: unknown, msg: string): asserts v {
  if (!v) throw new Error(msg);
}

export interface Res {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are checked field by field
  body: any;
  headers: Headers;
}

export async function call(
  url: string,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; raw?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<Res> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | Buffer | undefined = opts.raw;
  if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(url + path, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: res.status, body: parsed, headers: res.headers };
}

export const spec = (over: Partial<JobSpecInput> = {}): JobSpecInput => ({ name: 'hello', image: 'busybox:1.36', command: ['echo', 'hi'], ...over });

export function gpuAd(hostname = 'node-a', gpus = 1): NodeAdvertisementInput {
  // Unique uuids per advertisement: a GPU uuid is one device, and another provider's node may not claim it.
  const serial = randomBytes(4).toString('hex');
  return {
    hostname,
    agentVersion: '0.0.0-test',
    os: 'linux',
    arch: 'x64',
    cpuCores: 8,
    memoryMb: 32768,
    gpus: Array.from({ length: gpus }, (_, i) => ({ index: i, uuid: `GPU-${hostname}-${i}-${serial}`, vendor: 'nvidia' as const, model: 'NVIDIA H100 80GB HBM3', vramMb: 81920 })),
    docker: { available: false },
    executors: ['process'],
  };
}

export interface SignOpts {
  timestamp?: number;
  nonce?: string;
  /** Sign with this key instead of the agent's own. */
  privateKeyPem?: string;
  /** Send these bytes instead of the signed body. */
  sendBody?: string;
  /** Do not sign at all. */
  unsigned?: boolean;
}

/** A fake node agent that signs its requests like the real one. */
export class TestAgent {
  readonly keys = generateNodeKeyPair();
  readonly nodeId = nodeIdFromPublicKey(this.keys.publicKey);
  /** What register() sends as enrollmentToken by default: the harness's enrollment for this URL. */
  enrollmentToken: string | undefined;
  constructor(
    public url: string,
    readonly ad: NodeAdvertisementInput = gpuAd(),
  ) {
    this.enrollmentToken = defaultEnrollments.get(url);
  }

  async request(method: 'GET' | 'POST', path: string, body?: unknown, o: SignOpts = {}): Promise<Res> {
    const raw = body === undefined ? '' : JSON.stringify(body);
    const sig = o.unsigned
      ? {}
      : signRequest(
          { method, path, body: raw, nodeId: this.nodeId, ...(o.timestamp !== undefined ? { timestamp: o.timestamp } : {}), ...(o.nonce ? { nonce: o.nonce } : {}) },
          o.privateKeyPem ?? this.keys.privateKeyPem,
        );
    const sent = o.sendBody ?? raw;
    return call(this.url, method, path, { headers: sig, ...(sent !== '' ? { raw: sent } : {}) });
  }

  /**
   * Register with `token` (an enrollment token, or a provider's bearer token, for which an enrollment of
   * that account is made first), else with this agent's enrollmentToken.
   */
  async register(o?: SignOpts, token?: string) {
    const enrollmentToken = token !== undefined ? await enrollmentFor(this.url, token) : this.enrollmentToken;
    return this.request('POST', '/v1/agent/register', { publicKey: this.keys.publicKey, advertisement: this.ad, ...(enrollmentToken ? { enrollmentToken } : {}) }, o);
  }
  heartbeat(activeAttemptIds: string[] = [], o?: SignOpts) {
    return this.request('POST', '/v1/agent/heartbeat', { activeAttemptIds }, o);
  }
  /** Assignments seen by work(), by attempt id: result() commits to their job and inputs. */
  readonly assignments = new Map<string, KnownAssignment>();
  async work(waitMs = 0) {
    const res = await this.request('GET', `/v1/agent/work?waitMs=${waitMs}`);
    for (const a of res.status === 200 && Array.isArray(res.body?.assignments) ? res.body.assignments : []) this.assignments.set(a.attemptId, a);
    return res;
  }
  start(attemptId: string) {
    return this.request('POST', `/v1/agent/attempts/${attemptId}/start`);
  }
  /** The agent could not verify the assignment (issue 19): the attempt ends and the job is queued again. */
  refuse(attemptId: string, reason = 'the assignment is not signed by the coordinator') {
    return this.request('POST', `/v1/agent/attempts/${attemptId}/refuse`, { reason });
  }
  logs(attemptId: string, entries: LogEntry[]) {
    return this.request('POST', `/v1/agent/attempts/${attemptId}/logs`, { entries });
  }
  /** A report from report() is committed to and signed here, like the real agent does. */
  result(attemptId: string, report: ResultReport) {
    return this.request('POST', `/v1/agent/attempts/${attemptId}/result`, completeReport(this, attemptId, report, this.assignments.get(attemptId)));
  }
}

export function report(outcome: 'succeeded' | 'failed' | 'cancelled', files: Record<string, string> = {}, exitCode: number | null = 0): ResultReport {
  const outputs = Object.entries(files).map(([path, text]) => ({
    path,
    size: Buffer.byteLength(text),
    sha256: sha256Hex(text),
    content: Buffer.from(text).toString('base64'),
  }));
  const outputDigest = outputRootDigest(outputs);
  // TestAgent.result() builds and signs the commitment (it knows the assignment and holds the key).
  return { outcome, exitCode, error: null, outputDigest, outputs, metrics: { durationMs: 5 }, commitment: placeholderCommitment(outputDigest, exitCode), commitmentSignature: UNSIGNED };
}

/** Poll until `fn` returns a truthy value; generous deadline for slow machines. */
export async function waitFor<T>(fn: () => Promise<T | undefined | false | null>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A TestAgent that runs like a node: heartbeats listing what it holds, long-polls for work and hands each
 * assignment to `handle` (which starts the attempt and reports its result), until stopped.
 */
export abstract class LoopingAgent extends TestAgent {
  readonly held = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  protected abstract handle(a: Assignment): Promise<void>;

  run(): void {
    this.timer = setInterval(() => void this.heartbeat([...this.held]).catch(() => undefined), 150);
    void (async () => {
      while (!this.stopped) {
        try {
          const res = await this.work(200);
          if (res.status !== 200) {
            await new Promise((r) => setTimeout(r, 100));
            continue;
          }
          for (const a of WorkResponse.parse(res.body).assignments) {
            if (this.held.has(a.attemptId)) continue;
            this.held.add(a.attemptId);
            await this.handle(a);
            this.held.delete(a.attemptId);
          }
        } catch {
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    })();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }
}

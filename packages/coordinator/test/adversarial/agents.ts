/**
 * Adversarial node agents (issue 11, TRUST.md "Attacks the test suite must play"), on the signed TestAgent:
 * each takes work like a real agent (long-poll, start, signed result with its signed commitment) and
 * answers by its strategy. The right answer of a job is defined from its spec alone (rightOutput), so an
 * honest re-execution on any node (an audit, a referee) reproduces it bit for bit, and a wrong answer is
 * whatever else a cheater sends.
 *
 * Strategies: honest; lazy (random or empty output); replaying (the output of an earlier job); equivocating
 * (an honest result, then a second, different signed commitment for the same attempt); colluding (every
 * member of a ring returns the same wrong output for a job); selective (honest for its first N jobs, then
 * lazy); slow-loris (accepts and starts, never finishes; keeps heartbeating, or goes silent until its lease
 * is lost and then comes back for more).
 */
import { randomBytes } from 'node:crypto';
import { type Assignment, canonicalJson, type ResultReport, sha256Hex } from '@gpux/protocol';
import { completeReport } from '../commitment-helpers.js';
import { call, gpuAd, type Harness, report, TestAgent } from '../helpers.js';

export type Strategy =
  | { kind: 'honest' }
  | { kind: 'lazy'; output: 'random' | 'empty' }
  | { kind: 'replaying' }
  | { kind: 'equivocating' }
  | { kind: 'colluding'; ring: string }
  | { kind: 'selective'; honestJobs: number }
  | { kind: 'slow-loris'; heartbeats: boolean };

type Files = Record<string, string>;

/** The right output of a job: a digest of everything that defines what it computes (image, command, args, env, inputs). */
export function rightOutput(spec: Assignment['spec']): Files {
  const what = canonicalJson({ image: spec.image, command: spec.command, args: spec.args ?? [], env: spec.env ?? {}, inputs: spec.inputs ?? [] });
  return { 'out/result.txt': `${sha256Hex(what)}\n` };
}

/** The wrong output every member of `ring` returns for a job: the same for all of them, never the right one. */
export function ringOutput(ring: string, spec: Assignment['spec']): Files {
  return { 'out/result.txt': `${sha256Hex(`ring ${ring}\n${rightOutput(spec)['out/result.txt']}`)}\n` };
}

/** A provider account (operator): its bearer token and account id; its nodes register with its enrollment. */
export interface Operator {
  name: string;
  token: string;
  accountId: string;
}

/** A new provider account with `funds` (minor units) minted to its wallet (the harness has devMint on). */
export async function newOperator(h: Harness, name: string, funds: number): Promise<Operator> {
  const token = await h.buyer();
  const dep = await call(h.url, 'POST', '/v1/wallet/deposits', { token, body: { amount: funds } });
  if (dep.status !== 201) throw new Error(`deposit for ${name}: ${dep.status} ${JSON.stringify(dep.body)}`);
  const w = await call(h.url, 'GET', '/v1/wallet', { token });
  return { name, token, accountId: w.body.accountId as string };
}

export interface RanJob {
  jobId: string;
  attemptId: string;
  /** What the agent sent: right (the rightOutput), wrong, or nothing (stalled). */
  answer: 'right' | 'wrong' | 'none';
}

/** A node with a strategy, run as a background loop until stop() (or until the coordinator refuses it). */
export class AdversarialAgent {
  readonly agent: TestAgent;
  /** Every assignment it took, in order, with what it answered. */
  readonly ran: RanJob[] = [];
  /** Set when the coordinator refused the node (401/403): banned or removed. */
  refused = false;
  /** Errors of the loop (a failed request), for diagnostics. */
  readonly errors: string[] = [];
  /** Responses to the second commitment of an equivocating agent. */
  readonly equivocations: { attemptId: string; status: number }[] = [];
  private stopped = false;
  private loop: Promise<void> | undefined;
  private beat: NodeJS.Timeout | undefined;
  private silentUntilLost: string | undefined;
  private firstOutput: Files | undefined;
  private readonly stalled = new Set<string>();

  constructor(
    readonly h: Harness,
    readonly name: string,
    readonly strategy: Strategy,
    readonly operator: Operator,
  ) {
    this.agent = new TestAgent(h.url, gpuAd(name, 1));
  }

  get nodeId(): string {
    return this.agent.nodeId;
  }

  /** Register under its operator and stake `stake` from the operator's wallet. */
  async join(stake: number): Promise<this> {
    const reg = await this.agent.register(undefined, this.operator.token);
    if (reg.status !== 200) throw new Error(`register ${this.name}: ${reg.status} ${JSON.stringify(reg.body)}`);
    const staked = await call(this.h.url, 'POST', `/v1/nodes/${this.nodeId}/stake`, { token: this.operator.token, body: { amount: stake } });
    if (staked.status !== 200) throw new Error(`stake ${this.name}: ${staked.status} ${JSON.stringify(staked.body)}`);
    return this;
  }

  start(): this {
    this.beat = setInterval(() => void this.heartbeat(), 150);
    this.loop = this.run();
    return this;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.beat) clearInterval(this.beat);
    await this.loop;
  }

  private async heartbeat(): Promise<void> {
    if (this.stopped || this.refused || this.silentUntilLost) return;
    const res = await this.agent.heartbeat([...this.agent.assignments.keys()]).catch(() => undefined);
    if (res && (res.status === 401 || res.status === 403)) this.refused = true;
  }

  private async run(): Promise<void> {
    while (!this.stopped && !this.refused) {
      if (this.silentUntilLost) {
        await this.waitUntilLost(this.silentUntilLost);
        continue;
      }
      const res = await this.agent.work(250).catch((e: Error) => {
        this.errors.push(`work: ${e.message}`);
        return undefined;
      });
      if (!res) continue;
      if (res.status === 401 || res.status === 403) {
        this.refused = true;
        break;
      }
      if (res.status !== 200) {
        await sleep(50);
        continue;
      }
      for (const a of (res.body.assignments ?? []) as Assignment[]) {
        if (this.ran.some((r) => r.attemptId === a.attemptId) || this.stalled.has(a.attemptId)) continue;
        await this.take(a).catch((e: Error) => this.errors.push(`${a.attemptId}: ${e.message}`));
      }
    }
  }

  /** A silent slow-loris sends nothing until the coordinator has ended its attempt (lease lost), then comes back. */
  private async waitUntilLost(attemptId: string): Promise<void> {
    const state = (await this.h.coord.store.getAttempt(attemptId))?.state;
    if (state === 'assigned' || state === 'running') {
      await sleep(100);
      return;
    }
    this.silentUntilLost = undefined;
    this.agent.assignments.delete(attemptId);
  }

  private async take(a: Assignment): Promise<void> {
    const started = await this.agent.start(a.attemptId);
    if (started.status === 401 || started.status === 403) {
      this.refused = true;
      return;
    }
    if (started.status !== 200) return; // cancelled or ended meanwhile: not taken
    const right = rightOutput(a.spec);
    const s = this.strategy;
    const n = this.ran.length;
    let files: Files | null;
    switch (s.kind) {
      case 'honest':
      case 'equivocating':
        files = right;
        break;
      case 'lazy':
        files = s.output === 'empty' ? {} : { 'out/result.txt': `${randomBytes(32).toString('hex')}\n` };
        break;
      case 'replaying':
        files = this.firstOutput ?? right;
        break;
      case 'colluding':
        files = ringOutput(s.ring, a.spec);
        break;
      case 'selective':
        files = n < s.honestJobs ? right : { 'out/result.txt': `${randomBytes(32).toString('hex')}\n` };
        break;
      case 'slow-loris':
        files = null;
        break;
    }
    if (files === null) {
      this.ran.push({ jobId: a.jobId, attemptId: a.attemptId, answer: 'none' });
      this.stalled.add(a.attemptId);
      if (this.strategy.kind === 'slow-loris' && !this.strategy.heartbeats) this.silentUntilLost = a.attemptId;
      return;
    }
    this.firstOutput ??= files;
    const same = canonicalJson(files) === canonicalJson(right);
    this.ran.push({ jobId: a.jobId, attemptId: a.attemptId, answer: same ? 'right' : 'wrong' });
    const res = await this.agent.result(a.attemptId, report('succeeded', files));
    if (res.status === 401 || res.status === 403) this.refused = true;
    this.agent.assignments.delete(a.attemptId);
    if (s.kind === 'equivocating' && res.status === 200) {
      // The same attempt again, with other output under a second, validly signed commitment.
      const other: ResultReport = completeReport(this.agent, a.attemptId, report('succeeded', { 'out/result.txt': 'another answer\n' }), a);
      const second = await this.agent.request('POST', `/v1/agent/attempts/${a.attemptId}/result`, other);
      this.equivocations.push({ attemptId: a.attemptId, status: second.status });
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Proof of hardware on the coordinator (issue 12; TRUST.md "the node proved a GPU of class X at challenge
 * time (timed, checked computation)"). When: at registration (a node not proven, or whose advertisement
 * changed), at random re-check intervals (exponential, mean GPUX_CHALLENGE_RECHECK_MS), and after a failure
 * (GPUX_CHALLENGE_RETRY_MS). Always provider-wide: every live node of the provider is challenged at the same
 * instant, so one real GPU cannot answer for many identities (the clock starts at issue, for all of them).
 * How: core challenge/ sizes it for the claimed class, the node posts digests, we name row blocks to reveal
 * (rt.random, after the digests), and check them (Merkle path, Freivalds) and the time (class table).
 */
import {
  CPU_CLASS,
  type ChallengeRecord,
  type ChallengeSizing,
  type ChallengeTolerance,
  challengeClassOf,
  challengeSizing,
  challengeTolerance,
  challengeVerdict,
  chooseReveals,
  computeLimitMs,
  GpuxError,
  type NewChallenge,
  type NodeRecord,
  newId,
  REVEAL_BLOCK_BYTES,
  type RevealChoice,
  sizingBlocks,
} from '@gpux/core';
import { type ChallengeAssignment, type ChallengeDigestsRequest, type ChallengeDigestsResponse, type ChallengeRevealRequest, type ChallengeVerdict, MAX_REVEALS } from '@gpux/protocol';
import type { Needs } from '../runtime.js';
import { checkRevealOffThread } from './challenge-check.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type ChallengesDeps = Needs<'bus' | 'clock' | 'config' | 'index' | 'logger' | 'random' | 'signals' | 'signer' | 'store'>;

/** How long after its digests a node has to post the reveal (a few MiB at most; MAX_REVEALS blocks). */
export const REVEAL_GRACE_MS = 60_000;
/**
 * The reveal route's body limit: MAX_REVEALS blocks of at most REVEAL_BLOCK_BYTES (core challenge/classes.ts
 * rowBlockFor keeps a block near it; a block is never smaller than one row, n ≤ 65,536 int32 = 256 KiB) in
 * base64 (4/3), with room for the Merkle paths and JSON. Each block is bounded again before it is decoded.
 */
export const REVEAL_BODY_LIMIT_BYTES = Math.ceil((MAX_REVEALS * Math.max(REVEAL_BLOCK_BYTES, 65_536 * 4) * 4) / 3) + MAX_REVEALS * 4096 + 64 * 1024;
/** Nodes challenged per provider at once (the provider's node cap bounds it too). */
const PROVIDER_BATCH = 10_000;

export const challengeRequired = (rt: ChallengesDeps): boolean => rt.config.challenge === 'required';

/** Each GPU's class (challenge/classes.ts keys: the market class), in advertisement order; CPU-only: none. */
function gpuClasses(node: NodeRecord): Array<{ index: number; classKey: string; vramMb: number }> {
  return node.advertisement.gpus.map((g) => ({ index: g.index, classKey: challengeClassOf(g), vramMb: g.vramMb }));
}

/** The tolerance in force for a class: the table's, with the config's test/bench override on top. */
function toleranceOf(rt: ChallengesDeps, classKey: string): ChallengeTolerance {
  return { ...challengeTolerance(classKey), ...rt.config.challengeSizing?.tolerance };
}

/** The sizing for the node's claim (the slowest GPU's class; 'cpu' without GPUs), with the config's overrides. */
export function sizingFor(rt: ChallengesDeps, node: NodeRecord): ChallengeSizing {
  const o = rt.config.challengeSizing ?? {};
  const s = challengeSizing(gpuClasses(node), {
    ...(o.n !== undefined && { n: o.n }),
    ...(o.targetComputeMs !== undefined && { targetComputeMs: o.targetComputeMs }),
    ...(o.maxProducts !== undefined && { maxProducts: o.maxProducts }),
  });
  if (!o.tolerance) return s;
  // The deadline follows the overridden tolerance, as challengeSizing computes it.
  const tolerance = toleranceOf(rt, s.classKey);
  const hashBytes = Math.max(1, node.advertisement.gpus.length) * s.products * 4 * s.n * s.n;
  return { ...s, tolerance, deadlineMs: Math.ceil(computeLimitMs(s.expectedComputeMs, tolerance) + tolerance.startupMs + hashBytes / tolerance.hashBytesPerMs) };
}

function newChallenge(rt: ChallengesDeps, node: NodeRecord, now: number, resetProof: boolean): NewChallenge {
  const s = sizingFor(rt, node);
  return {
    id: newId('chl', now, rt.random),
    nodeId: node.id,
    seed: Buffer.from(rt.random.bytes(32)).toString('hex'),
    n: s.n,
    products: s.products,
    rowBlock: s.rowBlock,
    gpuIndices: node.advertisement.gpus.map((g) => g.index),
    claimedClass: s.classKey,
    // The node learns of it at its next heartbeat: one interval on top of the class's deadline.
    deadlineAt: now + s.deadlineMs + rt.config.heartbeatIntervalMs,
    ...(resetProof && { resetProof: true }),
  };
}

/**
 * Challenge `node` and, at the same instant, every other live node of its provider (those with an open
 * challenge keep it). `resetProof`: the node's standing proof no longer holds (its advertisement changed).
 */
export async function challengeProvider(rt: ChallengesDeps, node: NodeRecord, resetProof: boolean): Promise<ChallengeRecord[]> {
  const now = rt.clock.now();
  const others = node.providerId === null ? [] : await rt.store.liveNodesOfProvider(node.providerId, PROVIDER_BATCH);
  const nodes = [node, ...others.filter((o) => o.id !== node.id)];
  const issued = await rt.store.issueChallenges(
    nodes.map((n) => newChallenge(rt, n, now, resetProof && n.id === node.id)),
    now,
  );
  // A node that was not proven (or lost its proof) now reads 'challenging': still blocked, with that reason.
  const byId = new Map(nodes.map((n) => [n.id, n]));
  for (const c of issued) {
    const n = byId.get(c.nodeId);
    if (n && (n.proof?.state !== 'proven' || (resetProof && n.id === node.id))) rt.index.setProof(n.id, { ...emptyProof(), ...n.proof, state: 'challenging', reason: null });
  }
  if (resetProof && !issued.some((c) => c.nodeId === node.id)) rt.index.setProof(node.id, { ...emptyProof(), ...node.proof, state: 'challenging', reason: null });
  for (const c of issued) rt.bus.publish({ t: 'node', node: c.nodeId });
  if (issued.length > 0) rt.logger.info({ nodeId: node.id, providerId: node.providerId, challenged: issued.length }, 'proof-of-hardware challenge issued');
  return issued;
}

const emptyProof = () => ({ state: 'unproven' as const, provenClass: null, score: null, provenAt: null, reason: null, nextCheckAt: null });

/**
 * After a successful registration: GPUX_CHALLENGE=off marks the node 'skipped' (nothing gated); otherwise a
 * node not proven, or whose advertisement changed, is challenged (provider-wide).
 */
export async function afterRegister(rt: ChallengesDeps, before: NodeRecord | undefined, node: NodeRecord): Promise<void> {
  if (!challengeRequired(rt)) {
    if ((node.proof?.state ?? 'unproven') === 'unproven') await rt.store.skipProof(node.id);
    return;
  }
  const changed = before !== undefined && JSON.stringify(before.advertisement) !== JSON.stringify(node.advertisement);
  if (node.proof?.state === 'proven' && !changed) return;
  await challengeProvider(rt, node, changed && node.proof?.state === 'proven');
}

export function assignmentOf(c: ChallengeRecord): ChallengeAssignment {
  return { id: c.id, seed: c.seed, n: c.n, products: c.products, rowBlock: c.rowBlock, gpuIndices: c.gpuIndices, issuedAt: c.issuedAt, deadlineAt: c.deadlineAt };
}

/** What the node's heartbeat response carries: its pending challenge, if any. */
export async function heartbeatChallenge(rt: ChallengesDeps, nodeId: string): Promise<ChallengeAssignment | undefined> {
  if (!challengeRequired(rt)) return undefined;
  const c = await rt.store.pendingChallengeOf(nodeId);
  // Sealed until its deadline (issue 19): an agent runs only a challenge its coordinator signed.
  return c && rt.signer.sealChallenge(nodeId, assignmentOf(c));
}

/** The node's own challenge; another node's reads as not found. */
async function ownChallenge(rt: ChallengesDeps, nodeId: string, id: string): Promise<ChallengeRecord> {
  const c = await rt.store.getChallenge(id);
  if (!c || c.nodeId !== nodeId) throw new GpuxError('NOT_FOUND', `no challenge ${id} for node ${nodeId}: answer the challenge your heartbeat response carried`);
  return c;
}

/** GPU indices the digests must cover: the challenge's GPUs, or [0] for a CPU-only node. */
const expectedGpus = (c: ChallengeRecord): number[] => (c.gpuIndices.length > 0 ? c.gpuIndices : [0]);

function invalid(message: string, path: string): GpuxError {
  return new GpuxError('REQUEST_INVALID', message, { problems: [{ path, message }] });
}

/** The digests must cover exactly the challenge's GPUs, once each, one digest per product. */
function checkDigestsShape(c: ChallengeRecord, body: ChallengeDigestsRequest): void {
  const want = expectedGpus(c);
  const seen = new Set<number>();
  body.gpus.forEach((g, i) => {
    if (!want.includes(g.index)) throw invalid(`GPU ${g.index} is not in challenge ${c.id} (it covers ${want.join(', ')})`, `gpus.${i}.index`);
    if (seen.has(g.index)) throw invalid(`GPU ${g.index} is listed twice`, `gpus.${i}.index`);
    seen.add(g.index);
    if (g.digests.length !== c.products) throw invalid(`GPU ${g.index} has ${g.digests.length} digests; the challenge has ${c.products} products`, `gpus.${i}.digests`);
  });
  const missing = want.filter((g) => !seen.has(g));
  if (missing.length > 0) throw invalid(`digests for GPU ${missing.join(', ')} are missing: every GPU of the challenge answers`, 'gpus');
}

/** POST /v1/agent/challenges/:id/digests: record them before the deadline and name the blocks to reveal. */
export async function postDigests(rt: ChallengesDeps, nodeId: string, id: string, body: ChallengeDigestsRequest): Promise<ChallengeDigestsResponse> {
  const c = await ownChallenge(rt, nodeId, id);
  if (c.state !== 'pending') throw new GpuxError('CONFLICT', `challenge ${c.id} is ${c.state}${c.reason ? ` (${c.reason})` : ''}: ${c.state === 'digested' ? 'its digests are recorded; post the reveal' : 'it is over; the next challenge comes in a heartbeat response'}`);
  checkDigestsShape(c, body);
  const now = rt.clock.now();
  // Drawn only now, after the digests are in: the node could not know which blocks it must hold.
  const reveal = chooseReveals(rt.random, { gpus: expectedGpus(c), products: c.products, blocks: sizingBlocks(c), maxTotal: MAX_REVEALS });
  const res = await rt.store.recordChallengeDigests({
    challengeId: c.id,
    nodeId,
    runner: body.runner,
    digests: body.gpus,
    reveal,
    revealBy: now + REVEAL_GRACE_MS,
    retryAt: now + rt.config.challengeRetryMs,
    now,
  });
  if (!res.ok) {
    rt.index.setProof(nodeId, res.node.proof);
    rt.bus.publish({ t: 'node', node: nodeId });
    rt.logger.warn({ nodeId, challengeId: c.id, reason: res.challenge.reason }, 'proof-of-hardware challenge failed');
    throw new GpuxError('CONFLICT', `challenge ${c.id} ${res.challenge.reason}; the node takes no job until a later challenge passes (next at ${new Date(rt.config.challengeRetryMs + now).toISOString()})`);
  }
  return { reveal };
}

/** Draw the next re-check: exponential with mean GPUX_CHALLENGE_RECHECK_MS (memoryless: a node cannot time it). */
function nextRecheckAt(rt: ChallengesDeps, now: number): number {
  const u = rt.random.next();
  return now + Math.max(1, Math.round(-Math.log(1 - u) * rt.config.challengeRecheckMs));
}

/** POST /v1/agent/challenges/:id/reveal: check the blocks and the time, record the verdict on the node. */
export async function postReveal(rt: ChallengesDeps, nodeId: string, id: string, body: ChallengeRevealRequest): Promise<ChallengeVerdict> {
  const c = await ownChallenge(rt, nodeId, id);
  if (c.state !== 'digested' || !c.reveal || !c.digests || c.digestedAt === null) {
    throw new GpuxError('CONFLICT', `challenge ${c.id} is ${c.state}${c.reason ? ` (${c.reason})` : ''}: ${c.state === 'pending' ? 'post its digests first' : 'it is over; the next challenge comes in a heartbeat response'}`);
  }
  checkRevealShape(c.reveal, body);
  const node = await rt.store.getNode(nodeId);
  if (!node) throw new GpuxError('NODE_NOT_FOUND', `node ${nodeId} not found`);
  const now = rt.clock.now();
  const verdict = await judge(rt, c, node, body, now);
  const { node: after } = await rt.store.recordChallengeVerdict({
    challengeId: c.id,
    nodeId,
    now,
    outcome: verdict.outcome,
    reason: verdict.reason,
    provenClass: verdict.provenClass,
    score: verdict.score,
    nextCheckAt: verdict.outcome === 'passed' ? nextRecheckAt(rt, now) : now + rt.config.challengeRetryMs,
  });
  rt.index.setProof(nodeId, after.proof);
  rt.bus.publish({ t: 'node', node: nodeId });
  if (verdict.outcome === 'passed') {
    rt.logger.info({ nodeId, challengeId: c.id, class: verdict.provenClass, score: verdict.score }, 'node proved its hardware');
    rt.signals.kick();
  } else rt.logger.warn({ nodeId, challengeId: c.id, reason: verdict.reason }, 'proof-of-hardware challenge failed');
  return { outcome: verdict.outcome, reason: verdict.reason, provenClass: verdict.provenClass, score: verdict.score };
}

/** Exactly the blocks asked for, once each, each no larger than its block could be (bounded before decoding). */
function checkRevealShape(asked: readonly RevealChoice[], body: ChallengeRevealRequest): void {
  const key = (r: RevealChoice) => `${r.gpu}/${r.product}/${r.block}`;
  const want = new Set(asked.map(key));
  const seen = new Set<string>();
  body.blocks.forEach((b, i) => {
    if (!want.has(key(b))) throw invalid(`block (gpu ${b.gpu}, product ${b.product}, block ${b.block}) was not asked for; reveal exactly the blocks the digests response named`, `blocks.${i}`);
    if (seen.has(key(b))) throw invalid(`block (gpu ${b.gpu}, product ${b.product}, block ${b.block}) is revealed twice`, `blocks.${i}`);
    seen.add(key(b));
  });
  if (seen.size !== want.size) throw invalid(`${want.size - seen.size} of the ${want.size} blocks asked for are missing`, 'blocks');
}

async function judge(rt: ChallengesDeps, c: ChallengeRecord, node: NodeRecord, body: ChallengeRevealRequest, now: number) {
  const digests = new Map((c.digests ?? []).map((g) => [g.index, g.digests] as const));
  const checks = await checkRevealOffThread({ seedHex: c.seed, n: c.n, rowBlock: c.rowBlock, digests, requested: c.reveal ?? [], blocks: body.blocks }, rt.random);
  const classes = new Map(gpuClasses(node).map((g) => [g.index, g.classKey]));
  const hb = rt.config.heartbeatIntervalMs;
  const verdict = challengeVerdict({
    sizing: { classKey: c.claimedClass, n: c.n, products: c.products, deadlineMs: c.deadlineAt - c.issuedAt - hb, tolerance: toleranceOf(rt, c.claimedClass) },
    // From issue (the same instant for the whole provider), less the heartbeat interval the node may wait to learn of it.
    elapsedMs: Math.max(0, (c.digestedAt ?? now) - c.issuedAt - hb),
    gpus: (c.digests ?? []).map((g) => ({ index: g.index, classKey: c.gpuIndices.length === 0 ? CPU_CLASS : (classes.get(g.index) ?? c.claimedClass), computeMs: g.computeMs })),
    checks,
  });
  return verdict;
}

/**
 * The loop's pass: expire late challenges (their nodes leave the schedulable set with the reason), then
 * challenge the nodes due one, provider-wide.
 */
export async function challengePass(rt: ChallengesDeps, limit = 1000): Promise<{ expired: number; issued: number }> {
  const now = rt.clock.now();
  const expired = await rt.store.expireChallenges(now, rt.config.challengeRetryMs, limit);
  for (const n of expired) {
    rt.index.setProof(n.id, n.proof);
    rt.bus.publish({ t: 'node', node: n.id });
    rt.logger.warn({ nodeId: n.id, reason: n.proof?.reason }, 'proof-of-hardware challenge timed out');
  }
  let issued = 0;
  const due = await rt.store.dueChallengeNodes({ now, unproven: true, limit });
  const providers = new Set<string>();
  for (const n of due) {
    if (n.providerId !== null && providers.has(n.providerId)) continue; // already challenged with its provider
    if (n.providerId !== null) providers.add(n.providerId);
    issued += (await challengeProvider(rt, n, false)).length;
  }
  return { expired: expired.length, issued };
}

/**
 * One challenge, start to verdict (issue 12): compute with the runner, post the digests, reveal the blocks the
 * coordinator names, post them, and return the verdict. Aborted when the deadline (plus a grace for clock skew)
 * passes or the agent stops; the runner's products are freed either way.
 */
import type { Logger } from '@gpux/core';
import type { ChallengeAssignment, ChallengeDigestsRequest, ChallengeDigestsResponse, ChallengeRevealRequest, ChallengeVerdict } from '@gpux/protocol';
import type { ChallengeRunner } from './runner.js';

/** The two coordinator calls a challenge needs (CoordinatorClient has them). */
export interface ChallengeApi {
  challengeDigests(id: string, body: ChallengeDigestsRequest): Promise<ChallengeDigestsResponse>;
  challengeReveal(id: string, body: ChallengeRevealRequest): Promise<ChallengeVerdict>;
}

export interface ChallengeTaskDeps {
  client: ChallengeApi;
  runner: ChallengeRunner;
  logger: Logger;
  /** Aborts the challenge (agent stopping). */
  signal: AbortSignal;
  /** Past the assignment's own window, how long the node keeps trying (the two clocks may differ). Default 60 s. */
  graceMs?: number;
}

/** The verdict, or null when no blocks were asked for (the coordinator decided on the digests alone). */
export async function runChallenge(a: ChallengeAssignment, d: ChallengeTaskDeps): Promise<ChallengeVerdict | null> {
  const windowMs = Math.max(0, a.deadlineAt - a.issuedAt) + (d.graceMs ?? 60_000);
  const signal = AbortSignal.any([d.signal, AbortSignal.timeout(windowMs)]);
  const log = d.logger.child({ challengeId: a.id });
  log.info({ n: a.n, products: a.products, gpus: a.gpuIndices.length, runner: d.runner.kind }, 'proof-of-hardware challenge: computing');
  const run = await d.runner.run(a, signal);
  try {
    log.info({ computeMs: run.gpus.map((g) => Math.round(g.computeMs)), totalMs: Math.round(run.gpus[0]?.totalMs ?? 0) }, 'proof-of-hardware challenge: digests ready');
    const { reveal } = await d.client.challengeDigests(a.id, { runner: run.runner, gpus: run.gpus });
    if (reveal.length === 0) return null;
    if (signal.aborted) throw new Error('challenge aborted');
    const blocks = await run.reveal(reveal);
    const verdict = await d.client.challengeReveal(a.id, { blocks });
    const fields = { outcome: verdict.outcome, provenClass: verdict.provenClass, score: verdict.score, reason: verdict.reason };
    if (verdict.outcome === 'passed') log.info(fields, 'proof-of-hardware challenge passed');
    else log.warn(fields, 'proof-of-hardware challenge did not pass; the node takes no market job until it does');
    return verdict;
  } finally {
    await run.dispose();
  }
}

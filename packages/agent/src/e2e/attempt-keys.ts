/**
 * The data key of an encrypted attempt (issue 13). The node asks for it while the attempt is still assigned (GET
 * /v1/agent/attempts/:id/key, 404 KEY_NOT_RELEASED until the buyer's client released it), with backoff, until it comes, the attempt
 * is stopped or gone, or the wait passes its bound. It opens only with this node's X25519 key and the context the
 * node computes itself: purpose input, this job and attempt (or "any-job"/"any-attempt" for a key the buyer
 * pre-wrapped in the spec), this key's fingerprint, and e2eSpecDigest of the spec as assigned, so a key for
 * another node, attempt or an altered spec does not open and the attempt is refused, never run.
 */
import type { Clock, Logger, Random } from '@gpux/core';
import { type Assignment, e2eSpecDigest } from '@gpux/protocol';
import { unwrapKey, type X25519KeyPair, x25519Fingerprint } from '@gpux/protocol/e2e';
import { CoordinatorApiError, type CoordinatorClient, isUnreachable } from '../coordinator-client.js';
import { Backoff, sleep } from '../loop/backoff.js';

/** The key cannot be had or does not open: the attempt is refused (its reason goes to the coordinator). */
export class E2eRefusal extends Error {
  override name = 'E2eRefusal';
}

/** Longest the node waits for a key, whatever the coordinator allows (it ends the attempt itself after GPUX_E2E_KEY_WAIT_S). */
export const MAX_KEY_WAIT_MS = 60 * 60_000;

export interface KeyWait {
  client: CoordinatorClient;
  assignment: Assignment;
  encryption: X25519KeyPair | undefined;
  clock: Clock;
  random: Random;
  logger: Logger;
  /** Aborts when the attempt is stopped (cancel, shutdown). */
  signal: AbortSignal;
  maxWaitMs?: number;
  /** First and longest wait between asks. Defaults 500 ms, 10 s. */
  minDelayMs?: number;
  maxDelayMs?: number;
}

/** The opened data key; null when the attempt was stopped or the coordinator ended it meanwhile. Throws E2eRefusal. */
export async function awaitDataKey(w: KeyWait): Promise<Uint8Array | null> {
  const { attemptId, jobId, spec } = w.assignment;
  const enc = w.encryption;
  if (!enc) throw new E2eRefusal('this node has no encryption key (node-enc-key.json), so it cannot run encrypted jobs');
  const deadline = w.clock.now() + (w.maxWaitMs ?? MAX_KEY_WAIT_MS);
  const backoff = new Backoff(w.random, w.minDelayMs ?? 500, w.maxDelayMs ?? 10_000);
  let told = false;
  for (;;) {
    if (w.signal.aborted) return null;
    try {
      const res = await w.client.attemptKey(attemptId, w.signal);
      const job = res.scope === 'job';
      const ctx = { purpose: 'input' as const, jobId: job ? null : jobId, attemptId: job ? null : attemptId, recipientFingerprint: x25519Fingerprint(enc.publicKey), specDigest: e2eSpecDigest(spec) };
      try {
        return await unwrapKey(res.wrappedKey, enc.privateKey, ctx);
      } catch {
        throw new E2eRefusal(`the data key does not open with this node's key for this ${job ? 'spec' : 'job, attempt and spec'}: wrapped for another node, attempt or spec, or altered; refused, not run`);
      }
    } catch (e) {
      if (e instanceof E2eRefusal || w.signal.aborted) {
        if (w.signal.aborted) return null;
        throw e;
      }
      // KEY_NOT_RELEASED: the buyer has not released the key yet; any other 404, 409 or 410 means the attempt is over.
      const waiting = e instanceof CoordinatorApiError && e.code === 'KEY_NOT_RELEASED';
      if (!waiting && e instanceof CoordinatorApiError && (e.status === 404 || e.status === 409 || e.status === 410)) {
        w.logger.info({ err: e.message }, 'the coordinator no longer serves this attempt\'s key; dropping it');
        return null;
      }
      if (!waiting && !isUnreachable(e) && !(e instanceof CoordinatorApiError && e.status >= 500)) throw new E2eRefusal(`the data key could not be read: ${(e as Error).message}`);
      if (waiting && !told) {
        told = true;
        w.logger.info('waiting for the buyer to release the data key of this encrypted job');
      }
    }
    const wait = backoff.next();
    if (w.clock.now() + wait > deadline) throw new E2eRefusal(`no data key released within ${Math.round((w.maxWaitMs ?? MAX_KEY_WAIT_MS) / 1000)} s`);
    await sleep(wait, w.signal);
  }
}

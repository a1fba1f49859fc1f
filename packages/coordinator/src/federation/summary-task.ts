/**
 * The leader's summary pass (issue 15): every GPUX_PEER_SUMMARY_MS, one exchange with every peer that is due,
 * all at once. A failed exchange backs that peer off (its period doubled per failure in a row, up to a minute)
 * and records why; the next success clears it.
 */
import type { PeerExchangeOutcome, PeerRecord } from '@gpux/core';
import { PeriodicTask } from '../loops/periodic.js';
import type { Needs } from '../runtime.js';
import { exchangeSummary, PeerContactError } from './peer-client.js';
import { regionSummary, type SummaryDeps } from './summary.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type SummaryTaskDeps = SummaryDeps & Needs<'leads' | 'logger' | 'random' | 'signer'>;

const MAX_BACKOFF_MS = 60_000;

/** When to try a peer again after its `failures`-th failure in a row (1 = the first). */
export function peerRetryDelay(everyMs: number, failures: number): number {
  return Math.min(everyMs * 2 ** Math.min(Math.max(0, failures - 1), 16), Math.max(everyMs, MAX_BACKOFF_MS));
}

/** How long one exchange may take: two periods, at least 1 s, at most 10 s. */
export const exchangeTimeout = (everyMs: number): number => Math.min(10_000, Math.max(1_000, 2 * everyMs));

export async function exchangeWithPeers(rt: SummaryTaskDeps, fetchImpl?: typeof fetch): Promise<void> {
  const peers = await rt.store.listPeers();
  const now = rt.clock.now();
  const due = peers.filter((p) => p.nextTryAt === null || p.nextTryAt <= now);
  if (due.length === 0) return;
  const summary = await regionSummary(rt);
  const everyMs = rt.config.peerSummaryMs;
  await Promise.all(
    due.map(async (peer: PeerRecord) => {
      let outcome: PeerExchangeOutcome;
      try {
        const got = await exchangeSummary({ clock: rt.clock, random: rt.random, signer: rt.signer, ...(fetchImpl ? { fetch: fetchImpl } : {}) }, peer, summary, exchangeTimeout(everyMs));
        outcome = { at: rt.clock.now(), ok: true, rttMs: got.rttMs, summary: got.summary };
      } catch (err) {
        const contact = err instanceof PeerContactError ? err : new PeerContactError('unreachable', (err as Error).message);
        const at = rt.clock.now();
        outcome = { at, ok: false, status: contact.status, error: contact.message, nextTryAt: at + peerRetryDelay(everyMs, peer.failures + 1) };
        // The first failure in a row is worth a warning; the rest are in the peer's record.
        if (peer.failures === 0) rt.logger.warn({ peer: peer.id, url: peer.url, status: contact.status, err: contact.message }, 'peer summary exchange failed');
      }
      await rt.store.recordPeerExchange(peer.id, outcome);
    }),
  );
}

export function peerSummaryTask(rt: SummaryTaskDeps): PeriodicTask {
  return new PeriodicTask(rt, { what: 'peer summary exchange', everyMs: rt.config.peerSummaryMs, pass: () => exchangeWithPeers(rt) });
}

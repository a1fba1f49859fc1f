/**
 * The forwarder's polling half (issue 15): every open forward (store listOpenForwards: never contacted first, then
 * the oldest contact) is asked about once per pass, a few at a time: a row the peer never confirmed is sent again,
 * the others are read from their log cursor (forward-send.ts applies the answer). A peer that cannot be reached is
 * recorded and left to the lease: past it the job comes home by the normal expiry, and the late bill is booked
 * as the home's writeoff when the peer answers again.
 */
import type { ForwardRecord, JobRecord, PeerRecord } from '@gpux/core';
import { applyView, asContactError, callTimeoutMs, type ForwarderDeps, forgotten, noteFailure, type PeerClient, sendForward } from './forward-send.js';
import { fetchForwardedJob, PeerContactError } from './peer-client.js';

/** Open forwards read per pass, asked about at once, and log pages read per forward per pass at most. */
const OPEN_PER_PASS = 500;
const AT_ONCE = 16;
const LOG_PAGES_PER_PASS = 8;

/** Ask the peer about one forward; true when it has more log lines than this pass read. */
async function pollOne(rt: ForwarderDeps, client: PeerClient, f: ForwardRecord, peer: PeerRecord | undefined, job: JobRecord | undefined): Promise<boolean> {
  if (!job) return false;
  if (!peer) {
    await noteFailure(rt, f, new PeerContactError('unreachable', `peer ${f.peerId} was removed: this region can no longer ask it about the job`));
    return false;
  }
  if (f.remoteJobId === null) return sendForward(rt, client, f, peer, job);
  let cursor = f.logCursor;
  try {
    for (let page = 0; page < LOG_PAGES_PER_PASS; page++) {
      const { job: view } = await fetchForwardedJob(client, peer, f.remoteJobId, cursor, callTimeoutMs(rt));
      if (view.remoteJobId !== f.remoteJobId) throw new PeerContactError('unreachable', `${peer.url} answered about job ${view.remoteJobId}, not ${f.remoteJobId}`);
      if (!(await applyView(rt, client, f, peer, view, job))) return false;
      cursor = view.nextLogCursor;
    }
    return true;
  } catch (err) {
    const contact = asContactError(err);
    const code = contact.refusal?.code;
    if (code === 'NOT_FOUND' || code === 'JOB_NOT_FOUND') await forgotten(rt, f, peer);
    else await noteFailure(rt, f, contact);
    return false;
  }
}

/** One polling pass: returns true when some forward has log lines left to read now. */
export async function pollForwards(rt: ForwarderDeps, client: PeerClient): Promise<boolean> {
  const open = await rt.store.listOpenForwards(OPEN_PER_PASS);
  if (open.length === 0) return false;
  const peers = new Map((await rt.store.listPeers()).map((p) => [p.id, p]));
  const jobs = new Map((await rt.store.getJobs([...new Set(open.map((f) => f.jobId))])).map((j) => [j.id, j]));
  let more = false;
  for (let i = 0; i < open.length; i += AT_ONCE) {
    const results = await Promise.all(
      open.slice(i, i + AT_ONCE).map((f) =>
        pollOne(rt, client, f, peers.get(f.peerId), jobs.get(f.jobId)).catch((err: unknown) => {
          // One forward's failure must not stop the others; the next pass tries it again.
          rt.logger.error({ err, attemptId: f.attemptId, jobId: f.jobId }, 'forwarded job: poll failed');
          return false;
        }),
      ),
    );
    more ||= results.some(Boolean);
  }
  return more;
}

/** Federation peers (issue 15; core store/peers.ts): who they are and what the last summary exchange left. */
import { GpuxError, type NewPeer, type PeerExchangeOutcome, type PeerRecord } from '@gpux/core';
import { type PeerStatus, RegionSummary } from '@gpux/protocol';
import type { Selectable } from 'kysely';
import { inTx, type StoreContext } from './context.js';
import { isUniqueViolation } from './tokens.js';

export interface PeersTable {
  id: string;
  name: string;
  url: string;
  key_fingerprint: string;
  created_at: number;
  status: string;
  last_seen_at: number | null;
  rtt_ms: number | null;
  last_error: string | null;
  failures: number;
  next_try_at: number | null;
  summary: string | null; // JSON of a RegionSummary
  summary_at: number | null;
}

const num = (v: number | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));

/** A stored summary is re-checked on the way out: a row written by an older version must not reach a client unchecked. */
function summaryOf(json: string | null): RegionSummary | null {
  if (json === null) return null;
  try {
    const parsed = RegionSummary.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

function peerFromRow(r: Selectable<PeersTable>): PeerRecord {
  return {
    id: r.id,
    name: r.name,
    url: r.url,
    keyFingerprint: r.key_fingerprint,
    createdAt: Number(r.created_at),
    status: r.status as PeerStatus,
    lastSeenAt: num(r.last_seen_at),
    rttMs: num(r.rtt_ms),
    lastError: r.last_error,
    failures: Number(r.failures),
    nextTryAt: num(r.next_try_at),
    summary: summaryOf(r.summary),
    summaryAt: num(r.summary_at),
  };
}

export async function addPeer(ctx: StoreContext, p: NewPeer): Promise<PeerRecord> {
  const row: Selectable<PeersTable> = {
    id: p.id,
    name: p.name,
    url: p.url,
    key_fingerprint: p.keyFingerprint,
    created_at: p.createdAt,
    status: 'new',
    last_seen_at: null,
    rtt_ms: null,
    last_error: null,
    failures: 0,
    next_try_at: null,
    summary: null,
    summary_at: null,
  };
  try {
    await inTx(ctx, async (trx) => {
      const clash = await trx
        .selectFrom('peers')
        .select(['id', 'url', 'key_fingerprint'])
        .where((eb) => eb.or([eb('url', '=', p.url), eb('key_fingerprint', '=', p.keyFingerprint)]))
        .executeTakeFirst();
      if (clash) throw clashError(clash, p);
      await trx.insertInto('peers').values(row).execute();
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new GpuxError('CONFLICT', `a peer with the URL ${p.url} or the key ${p.keyFingerprint} was added at the same time`, { cause: err });
    throw err;
  }
  return peerFromRow(row);
}

function clashError(clash: { id: string; url: string; key_fingerprint: string }, p: NewPeer): GpuxError {
  const what = clash.url === p.url ? `the URL ${p.url}` : `the key ${p.keyFingerprint}`;
  return new GpuxError('CONFLICT', `peer ${clash.id} already has ${what}: remove it first (gpux region peer remove ${clash.id})`);
}

export async function listPeers(ctx: StoreContext): Promise<PeerRecord[]> {
  const rows = await ctx.db.selectFrom('peers').selectAll().orderBy('created_at').orderBy('id').execute();
  return rows.map(peerFromRow);
}

export async function getPeer(ctx: StoreContext, id: string): Promise<PeerRecord | undefined> {
  const row = await ctx.db.selectFrom('peers').selectAll().where('id', '=', id).executeTakeFirst();
  return row && peerFromRow(row);
}

export async function findPeerByKey(ctx: StoreContext, keyFingerprint: string): Promise<PeerRecord | undefined> {
  const row = await ctx.db.selectFrom('peers').selectAll().where('key_fingerprint', '=', keyFingerprint).executeTakeFirst();
  return row && peerFromRow(row);
}

export async function removePeer(ctx: StoreContext, id: string): Promise<PeerRecord | undefined> {
  return inTx(ctx, async (trx) => {
    const row = await trx.selectFrom('peers').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) return undefined;
    await trx.deleteFrom('peers').where('id', '=', id).execute();
    return peerFromRow(row);
  });
}

export async function recordPeerExchange(ctx: StoreContext, id: string, o: PeerExchangeOutcome): Promise<void> {
  const q = ctx.db.updateTable('peers').where('id', '=', id);
  if (o.ok) {
    await q
      .set({ status: 'ok', rtt_ms: Math.round(o.rttMs), last_seen_at: o.at, last_error: null, failures: 0, next_try_at: null, summary: JSON.stringify(o.summary), summary_at: o.at })
      .execute();
  } else {
    await q.set((eb) => ({ status: o.status, last_error: o.error.slice(0, 1024), failures: eb('failures', '+', 1), next_try_at: o.nextTryAt })).execute();
  }
}

export async function recordPeerSummary(ctx: StoreContext, id: string, summary: RegionSummary, at: number): Promise<void> {
  await ctx.db.updateTable('peers').set({ summary: JSON.stringify(summary), summary_at: at, last_seen_at: at }).where('id', '=', id).execute();
}

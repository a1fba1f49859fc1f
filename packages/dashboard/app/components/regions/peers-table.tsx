/**
 * The peer regions (issue 15): name, URL, key, the status of the last exchange (with its error), round trip, last
 * seen, and the peer's last signed summary: free GPUs and index price per class, queue depth, placement wait.
 */
import type { PeerStatus, PeerView } from '@gpux/protocol';
import { ago, duration, num, shortId } from '../../lib/format.js';
import { ClassLines, ONE_LINE, waitP50 } from './figures.js';

/** A summary older than this is shown with its age (three default exchange periods). */
export const STALE_SUMMARY_MS = 15_000;

/** The word always says the status; the color repeats it (the node states' colors). */
const STATUS_CLASS: Record<PeerStatus, string> = { new: '', ok: 'st-online', unreachable: 'st-lost', unauthorized: 'st-failed' };

const STATUS_TITLE: Record<PeerStatus, string> = {
  new: 'Not contacted yet: the first exchange comes with the next pass',
  ok: 'The last summary exchange worked',
  unreachable: 'The last exchange failed; it is tried again with a growing pause (up to a minute)',
  unauthorized: 'The peer refused this region’s signature, or answered with another key than the one pinned here',
};

export function PeerStatusBadge({ status }: { status: PeerStatus }) {
  return (
    <span className={`badge ${STATUS_CLASS[status]}`} title={STATUS_TITLE[status]}>
      {status}
    </span>
  );
}

function Row({ p, now }: { p: PeerView; now: number }) {
  const s = p.summary;
  const stale = s !== null && p.summaryAt !== null && (p.status !== 'ok' || now - p.summaryAt > STALE_SUMMARY_MS);
  return (
    <tr data-peer-id={p.id} data-peer-name={p.name} data-status={p.status}>
      <th scope="row">
        {p.name}
        <span className="id id-line" style={ONE_LINE}>{s && s.region !== p.name ? `region ${s.region}` : shortId(p.id, 18)}</span>
      </th>
      <td className="hide-sm">
        <span className="id" data-field="url">
          {p.url}
        </span>
        <span className="id id-line" title={`Key fingerprint ${p.keyFingerprint}`}>
          key <span data-field="key">{shortId(p.keyFingerprint, 16)}</span>
        </span>
      </td>
      <td data-field="status">
        <PeerStatusBadge status={p.status} />
        {p.lastError && p.status !== 'ok' ? (
          <span className="id-line" data-field="error">
            {p.lastError}
            {p.failures > 1 ? ` (${num(p.failures)} failures in a row)` : ''}
          </span>
        ) : null}
      </td>
      <td className="num" data-field="rtt">
        {p.rttMs === null ? '—' : duration(p.rttMs)}
      </td>
      <td data-field="last-seen">{p.lastSeenAt === null ? 'never' : ago(p.lastSeenAt, now)}</td>
      <td data-field="classes">
        {s ? <ClassLines summary={s} /> : <span className="muted">no summary yet</span>}
        {stale && p.summaryAt !== null ? (
          <span className="id-line" data-field="summary-age">
            summary from {ago(p.summaryAt, now)}
          </span>
        ) : null}
      </td>
      <td className="num" data-field="queued">
        {s ? num(s.queueDepth) : '—'}
      </td>
      <td className="num hide-sm" data-field="wait">
        {s ? waitP50(s) : '—'}
      </td>
    </tr>
  );
}

export function PeersTable({ peers, now }: { peers: readonly PeerView[]; now: number }) {
  if (peers.length === 0) {
    return (
      <p className="empty-note" data-testid="no-peers">
        No peers yet. Peer with another region both ways: <code>gpux region peer add URL --key FINGERPRINT</code> here (its fingerprint is what{' '}
        <code>gpux coordinator key show</code> prints there), and the same for this region there.
      </p>
    );
  }
  return (
    <div className="table-wrap">
      <table className="data" data-testid="peers-table">
        <caption>
          {num(peers.length)} peer{peers.length === 1 ? '' : 's'}
        </caption>
        <thead>
          <tr>
            <th scope="col">Peer</th>
            <th scope="col" className="hide-sm">
              URL <span className="th-sub">key</span>
            </th>
            <th scope="col">Status</th>
            <th scope="col" className="num">
              Round trip
            </th>
            <th scope="col">Last seen</th>
            <th scope="col">
              Per class <span className="th-sub">free / total GPUs · index price, USDC per GPU-hour</span>
            </th>
            <th scope="col" className="num">
              Queued
            </th>
            <th scope="col" className="num hide-sm">
              Wait <span className="th-sub">p50</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {peers.map((p) => (
            <Row key={p.id} p={p} now={now} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * Inter-region clearing (issue 15, GET /v1/federation/balance): per peer and asset, what this region owes the peer
 * (positive) or is owed by it (negative), the peer's credit line here, and the jobs forwarded either way with those
 * still open. A pair's two balances net to zero once its open jobs have ended.
 */
import type { ClearingBalanceView } from '@gpux/protocol';
import { money, num, shortId } from '../../lib/format.js';
import { ONE_LINE } from './figures.js';

/** The balance in words: who owes whom. */
export function owes(b: ClearingBalanceView): string {
  if (b.balance > 0) return 'this region owes the peer';
  if (b.balance < 0) return 'the peer owes this region';
  return 'even';
}

function Row({ b }: { b: ClearingBalanceView }) {
  return (
    <tr data-peer-id={b.peerId} data-peer-name={b.peer} data-asset={b.asset}>
      <th scope="row">
        {b.peer}
        <span className="id id-line" style={ONE_LINE}>
          {b.region !== null ? `region ${b.region}` : shortId(b.peerId, 18)}
        </span>
      </th>
      <td className="num" data-field="balance" data-minor={b.balance}>
        <span className="amt">{money(b.balance, b.asset)}</span>
        <span className="id-line muted small" data-field="owes">
          {owes(b)}
        </span>
      </td>
      <td className="num" data-field="credit-limit" data-minor={b.creditLimit} title="The most the peer may owe this region in this asset (GPUX_PEER_CREDIT)">
        {money(b.creditLimit, b.asset)}
      </td>
      <td className="num" data-field="sent">
        {num(b.jobsSent)}
      </td>
      <td className="num" data-field="received">
        {num(b.jobsReceived)}
      </td>
      <td className="num" data-field="open">
        {num(b.open)}
      </td>
    </tr>
  );
}

export function ClearingTable({ balances }: { balances: readonly ClearingBalanceView[] }) {
  if (balances.length === 0) {
    return (
      <p className="empty-note" data-testid="no-clearing">
        No peers and no clearing yet.
      </p>
    );
  }
  return (
    <div className="table-wrap">
      <table className="data" data-testid="clearing-table">
        <caption className="sr-only">Clearing balance per peer and asset, the peer’s credit line, and the jobs forwarded either way</caption>
        <thead>
          <tr>
            <th scope="col">Peer</th>
            <th scope="col" className="num">
              Balance <span className="th-sub">+ this region owes · − owed to it</span>
            </th>
            <th scope="col" className="num">
              Credit limit <span className="th-sub">the peer may owe</span>
            </th>
            <th scope="col" className="num">
              Jobs sent
            </th>
            <th scope="col" className="num">
              Jobs received
            </th>
            <th scope="col" className="num">
              Open
            </th>
          </tr>
        </thead>
        <tbody>
          {balances.map((b) => (
            <Row key={`${b.peerId}/${b.asset}`} b={b} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

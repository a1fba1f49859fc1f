/** The account's wallet statement, newest first (GET /v1/wallet/history): deposits, holds, refunds, earnings, stake. */
import type { WalletHistoryResponse } from '@gpux/protocol';
import { dateTime, money, shortId, signedMoney, timeOfDay } from '../../lib/format.js';
import { Link } from '../../lib/router.js';

export function WalletHistory({ data }: { data: WalletHistoryResponse }) {
  if (data.entries.length === 0) return <p className="muted">No money has moved in this wallet yet.</p>;
  return (
    <div className="table-wrap">
      <table data-testid="wallet-history">
        <caption className="sr-only">Wallet history, newest first</caption>
        <thead>
          <tr>
            <th scope="col" className="hide-sm">
              Time
            </th>
            <th scope="col">Kind</th>
            <th scope="col" className="num">
              Amount
            </th>
            <th scope="col" className="num hide-sm">
              Balance after
            </th>
            <th scope="col" className="hide-sm">
              Job
            </th>
            <th scope="col" className="hide-md">
              Memo
            </th>
          </tr>
        </thead>
        <tbody>
          {data.entries.map((e) => (
            <tr key={`${e.transferId}:${e.asset}`} data-transfer-id={e.transferId}>
              <td className="nowrap hide-sm">
                <time dateTime={new Date(e.at).toISOString()} title={dateTime(e.at)}>
                  {timeOfDay(e.at)}
                </time>
              </td>
              <td className="nowrap">{e.kind}</td>
              <td className={`num nowrap amt ${e.amount < 0 ? 'neg' : 'pos'}`} data-minor={e.amount}>
                {signedMoney(e.amount, e.asset)}
              </td>
              <td className="num nowrap hide-sm">{money(e.balanceAfter, e.asset)}</td>
              <td className="id nowrap hide-sm">{e.jobId ? <Link to={`/jobs/${encodeURIComponent(e.jobId)}`} title={e.jobId}>{shortId(e.jobId)}</Link> : '—'}</td>
              <td className="hide-md muted small">{e.memo}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

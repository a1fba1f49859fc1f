/** Operators: the latest ledger transfers (GET /v1/ledger), each with its postings; every transfer sums to zero. */
import type { LedgerResponse, TransferView } from '@gpux/protocol';
import { shortId, signedMoney, timeOfDay } from '../../lib/format.js';
import { Link } from '../../lib/router.js';

/** "escrow:job-…" with the job linked; other accounts as short ids with the full name in the title. */
export function AccountName({ account }: { account: string }) {
  const [kind, id] = account.includes(':') ? [account.slice(0, account.indexOf(':')), account.slice(account.indexOf(':') + 1)] : [account, ''];
  if (!id) return <span className="acct">{kind}</span>;
  const short = shortId(id, 12);
  return (
    <span className="acct" title={account}>
      {kind}:{kind === 'escrow' ? <Link to={`/jobs/${encodeURIComponent(id)}`}>{short}</Link> : kind === 'stake' ? <Link to={`/nodes/${encodeURIComponent(id)}`}>{short}</Link> : short}
    </span>
  );
}

function Postings({ t }: { t: TransferView }) {
  return (
    <ul className="postings">
      {t.postings.map((p, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: postings have no id; their order is the transfer's own
        <li key={i}>
          <AccountName account={p.account} /> <span className={`amt ${p.amount < 0 ? 'neg' : 'pos'}`}>{signedMoney(p.amount, p.asset)}</span>
        </li>
      ))}
    </ul>
  );
}

export function LedgerPanel({ data }: { data: LedgerResponse }) {
  if (data.transfers.length === 0) return <p className="muted">No transfers yet.</p>;
  return (
    <div className="table-wrap">
      <table data-testid="ledger">
        <caption className="sr-only">Latest ledger transfers, newest first</caption>
        <thead>
          <tr>
            <th scope="col" className="hide-sm">
              Time
            </th>
            <th scope="col">Kind</th>
            <th scope="col">Postings</th>
            <th scope="col" className="hide-sm">
              Memo
            </th>
          </tr>
        </thead>
        <tbody>
          {data.transfers.map((t) => (
            <tr key={t.id} data-transfer-id={t.id}>
              <td className="nowrap hide-sm">
                <time dateTime={new Date(t.at).toISOString()}>{timeOfDay(t.at)}</time>
              </td>
              <td className="nowrap" data-field="kind">
                {t.kind}
              </td>
              <td>
                <Postings t={t} />
              </td>
              <td className="hide-sm muted small">{t.memo}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

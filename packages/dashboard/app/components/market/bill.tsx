/** A job's bill (GET /v1/jobs/:id/bill): what was held, charged (to providers and the treasury), refunded, and every line. */
import type { BillResponse } from '@gpux/protocol';
import { money, signedMoney, timeOfDay } from '../../lib/format.js';
import { AccountName } from './ledger-panel.js';

type TotalKey = 'held' | 'charged' | 'toProviders' | 'fee' | 'refunded' | 'inEscrow';

/** [field, label, part of the line above]: charged = to providers + treasury fee. */
const TOTALS: Array<[TotalKey, string, boolean?]> = [
  ['held', 'Held in escrow'],
  ['charged', 'Charged'],
  ['toProviders', 'to providers', true],
  ['fee', 'treasury fee', true],
  ['refunded', 'Refunded'],
  ['inEscrow', 'Still in escrow'],
];

export function Bill({ data, perUnit }: { data: BillResponse; perUnit: string }) {
  if (!data.market) return <p className="muted">This job ran free: the coordinator ran it without a market.</p>;
  return (
    <div data-testid="bill">
      <dl className="facts bill-totals" aria-label="Bill totals">
        <div>
          <dt>Most it pays</dt>
          <dd data-field="capPerUnitHour" data-minor={data.capPerUnitHour}>
            {money(data.capPerUnitHour, data.asset)} per {perUnit}
          </dd>
        </div>
        {TOTALS.map(([k, label, part]) => (
          <div key={k} className={part ? 'sub' : undefined}>
            <dt>{label}</dt>
            <dd data-field={k} data-minor={data[k]}>
              {money(data[k], data.asset)}
            </dd>
          </div>
        ))}
      </dl>
      {data.lines.length === 0 ? null : (
        <div className="table-wrap">
          <table data-testid="bill-lines">
            <caption>Lines, from your side: money out of your wallet is negative</caption>
            <thead>
              <tr>
                <th scope="col" className="hide-sm">
                  Time
                </th>
                <th scope="col">Kind</th>
                <th scope="col" className="hide-sm">
                  Account
                </th>
                <th scope="col" className="num">
                  Amount
                </th>
              </tr>
            </thead>
            <tbody>
              {data.lines.map((l, i) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: a line is a posting, which has no id; the order is the ledger's
                <tr key={`${l.transferId}:${l.account}:${i}`} data-kind={l.kind} title={l.memo}>
                  <td className="nowrap hide-sm">{timeOfDay(l.at)}</td>
                  <td className="nowrap">{l.kind}</td>
                  <td className="hide-sm">
                    <AccountName account={l.account} />
                  </td>
                  <td className={`num nowrap amt ${l.amount < 0 ? 'neg' : 'pos'}`} data-minor={l.amount}>
                    {signedMoney(l.amount, data.asset)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

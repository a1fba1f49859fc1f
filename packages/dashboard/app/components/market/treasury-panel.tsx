/** Operators: where all the money is, per asset (GET /v1/treasury), with the ledger's invariant check said plainly. */
import type { TreasuryResponse } from '@gpux/protocol';
import { amount, bps } from '../../lib/format.js';

type Totals = TreasuryResponse['assets'][number];

const COLUMNS: Array<[keyof Totals, string, string]> = [
  ['minted', 'Brought in', 'Minted and deposited, less completed payouts'],
  ['wallets', 'Wallets', 'Available in every wallet'],
  ['escrow', 'Escrow', 'Held for unfinished jobs'],
  ['stake', 'Stake', 'Bonded to nodes and unbonding'],
  ['pendingPayouts', 'Payouts', 'Withdrawals not yet paid out'],
  ['treasury', 'Treasury', 'Fees kept by the network'],
];

export function Balanced({ ok }: { ok: boolean }) {
  return (
    <span className={`badge ${ok ? 'st-succeeded' : 'st-failed'}`} data-testid="balanced" data-balanced={ok}>
      {ok ? 'Balanced' : 'NOT balanced'}
    </span>
  );
}

export function TreasuryPanel({ data }: { data: TreasuryResponse }) {
  const allOk = data.assets.every((a) => a.balanced);
  return (
    <div data-testid="treasury">
      <p className={allOk ? 'muted' : 'error'} role={allOk ? undefined : 'alert'}>
        {allOk
          ? 'Balanced: per asset, the accounts inside the network add up to what was brought in, and none is negative.'
          : 'NOT balanced: the accounts do not add up to what was brought in, or one is negative. Stop payouts and check the ledger.'}
      </p>
      <div className="table-wrap">
        <table>
          <caption className="sr-only">Ledger totals per asset</caption>
          <thead>
            <tr>
              <th scope="col">Asset</th>
              {COLUMNS.map(([k, label, what]) => (
                <th key={k} scope="col" className={`num${k === 'minted' || k === 'treasury' ? '' : ' hide-sm'}`} title={what}>
                  {label}
                </th>
              ))}
              <th scope="col">Check</th>
            </tr>
          </thead>
          <tbody>
            {data.assets.map((a) => (
              <tr key={a.asset} data-asset={a.asset}>
                <th scope="row">{a.asset.toUpperCase()}</th>
                {COLUMNS.map(([k]) => (
                  <td key={k} className={`num${k === 'minted' || k === 'treasury' ? '' : ' hide-sm'}`} data-field={k} data-minor={a[k] as number}>
                    {amount(a[k] as number)}
                  </td>
                ))}
                <td>
                  <Balanced ok={a.balanced} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p className="muted small table-note">The treasury fee is {bps(data.feeBps)} of each charge.</p>
    </div>
  );
}

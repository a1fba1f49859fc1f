/** The signed-in account's balances per asset (GET /v1/wallet): available, held in escrow, pending payout. */
import type { WalletResponse } from '@gpux/protocol';
import { money } from '../../lib/format.js';
import { Stat } from '../bits.js';

const PARTS = [
  ['available', 'available', 'Spendable: holds new jobs, pays stake, can be withdrawn'],
  ['inEscrow', 'in escrow', 'Held for your unfinished jobs'],
  ['pendingPayout', 'pending payout', 'Withdrawals not paid out yet'],
] as const;

export function WalletBalances({ data }: { data: WalletResponse }) {
  // Every asset with money in it; USDC always, so an empty wallet still says so.
  const shown = data.balances.filter((b) => b.asset === 'usdc' || b.available + b.inEscrow + b.pendingPayout > 0);
  return (
    <div data-testid="wallet-balances">
      {shown.map((b) => (
        <div className="stats" key={b.asset} data-asset={b.asset}>
          {PARTS.map(([k, label, sub]) => (
            <Stat key={k} label={`${b.asset.toUpperCase()} ${label}`} value={<span data-field={k} data-minor={b[k]}>{money(b[k], b.asset)}</span>} sub={sub} />
          ))}
        </div>
      ))}
    </div>
  );
}

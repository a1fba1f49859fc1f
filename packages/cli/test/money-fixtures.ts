/** Money records shared by the CLI's money tests (a fixed time, a pending payout). */
import type { PayoutView } from '@gpux/protocol';

export const AT = Date.UTC(2024, 0, 2, 3, 4, 5);

export const payout = (o: Partial<PayoutView> = {}): PayoutView => ({
  id: 'pay-1',
  accountId: 'acc-1',
  asset: 'usdc',
  amount: 12_500_000,
  destination: 'iban:DE00',
  adapter: 'manual',
  state: 'pending',
  reference: null,
  reason: null,
  createdAt: AT,
  updatedAt: AT,
  ...o,
});

/** The signed-in account's wallet: balances per asset and the latest movements. A provider's earnings show here. */
import type { WalletHistoryResponse, WalletResponse } from '@gpux/protocol';
import { WalletBalances } from '../components/market/wallet-balances.js';
import { WalletHistory } from '../components/market/wallet-history.js';
import { NotYet } from '../components/not-yet.js';
import { ErrorNote, Page, Section } from '../components/page.js';
import { api } from '../lib/api.js';
import { useFeature } from '../lib/features.js';
import { usePoll } from '../lib/use-poll.js';

const HISTORY = 50;

function Live() {
  const wallet = usePoll((signal) => api<WalletResponse>('/v1/wallet', { signal }), []);
  const history = usePoll((signal) => api<WalletHistoryResponse>(`/v1/wallet/history?limit=${HISTORY}`, { signal }), []);
  return (
    <Page title="Wallet" subtitle={wallet.data ? <span className="id">Account {wallet.data.accountId}</span> : undefined} updatedAt={wallet.updatedAt}>
      {wallet.error ? <ErrorNote error={wallet.error} /> : null}
      {wallet.data ? <WalletBalances data={wallet.data} /> : <p className="muted">Loading…</p>}
      <div className="grid two">
        <Section title="History" wide>
          {history.error ? <ErrorNote error={history.error} /> : null}
          {history.data ? <WalletHistory data={history.data} /> : <p className="muted">Loading…</p>}
          <p className="muted small table-note">
            Deposit and withdraw with the CLI: <code>gpux wallet deposit</code>, <code>gpux wallet withdraw</code>.
          </p>
        </Section>
      </div>
    </Page>
  );
}

export function Wallet() {
  const has = useFeature('wallet');
  if (has) return <Live />;
  return <Page title="Wallet">{has === undefined ? <p className="muted">Checking the API…</p> : <NotYet feature="wallet" what="your wallet" />}</Page>;
}

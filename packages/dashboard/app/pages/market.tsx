/** Market: index prices per class with their history, live supply and demand, and for operators the treasury and ledger. */
import type { LedgerResponse, MarketPricesResponse, StatsResponse, TreasuryResponse } from '@gpux/protocol';
import type { Account } from '../components/layout.js';
import { LedgerPanel } from '../components/market/ledger-panel.js';
import { PriceHistory } from '../components/market/price-history.js';
import { PriceTable } from '../components/market/price-table.js';
import { SupplyChart } from '../components/market/supply-chart.js';
import { TreasuryPanel } from '../components/market/treasury-panel.js';
import { NotYet, Optional } from '../components/not-yet.js';
import { ErrorNote, Page, Section } from '../components/page.js';
import { api } from '../lib/api.js';
import { useFeature } from '../lib/features.js';
import { usePoll } from '../lib/use-poll.js';

const LEDGER_ROWS = 15;

/** The price table and the history chart share one read of the prices. */
function Prices() {
  const res = usePoll((signal) => api<MarketPricesResponse>('/v1/market/prices', { signal }), []);
  const p = res.data;
  if (p && !p.market) {
    return (
      <Section title="Prices" wide>
        <p className="no-market" data-testid="no-market">
          This coordinator runs without a market: jobs are free.
        </p>
      </Section>
    );
  }
  return (
    <>
      <Section title="Price per GPU-hour" wide>
        {res.error ? <ErrorNote error={res.error} /> : null}
        {p ? <PriceTable data={p} /> : <p className="muted">Loading…</p>}
      </Section>
      <Section title="Price history" wide>
        <PriceHistory classes={p?.classes.map((c) => c.class) ?? []} />
      </Section>
    </>
  );
}

function Operator() {
  return (
    <>
      <Section title="Treasury" wide>
        <Optional feature="treasury" what="the treasury balance and fees" render={(d) => <TreasuryPanel data={d as TreasuryResponse} />} />
      </Section>
      <Section title="Ledger" wide>
        <p className="muted small">The latest transfers, newest first. Every transfer's postings sum to zero.</p>
        <Optional feature="ledger" search={`?limit=${LEDGER_ROWS}`} what="the ledger of postings" render={(d) => <LedgerPanel data={d as LedgerResponse} />} />
      </Section>
    </>
  );
}

export function Market({ account }: { account: Account }) {
  const stats = usePoll((signal) => api<StatsResponse>('/v1/stats', { signal }), []);
  const hasPrices = useFeature('prices');
  return (
    <Page title="Market" subtitle="Prices come from supply and demand per GPU class." updatedAt={stats.updatedAt}>
      <div className="grid two">
        {hasPrices ? (
          <Prices />
        ) : (
          <Section title="Prices" wide>
            {hasPrices === undefined ? <p className="muted">Checking the API…</p> : <NotYet feature="prices" what="prices per GPU class" />}
          </Section>
        )}
        <Section title="Demand and supply, live" wide>
          <SupplyChart stats={stats} />
        </Section>
        {account.role === 'operator' ? <Operator /> : null}
      </div>
    </Page>
  );
}

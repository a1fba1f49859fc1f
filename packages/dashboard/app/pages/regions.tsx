/**
 * Regions (operators, issue 15): this coordinator's region with its key and its own summary, the peer regions it
 * exchanges signed summaries with: their health, capacity and prices (GET /v1/federation/peers), and the clearing
 * with each: balance per asset, credit line, jobs sent, received and open (GET /v1/federation/balance).
 */
import type { ListPeersResponse, RegionBalanceResponse, RegionView } from '@gpux/protocol';
import { Facts } from '../components/bits.js';
import { ErrorNote, Page, Section } from '../components/page.js';
import { ClearingTable } from '../components/regions/clearing-table.js';
import { ClassTable, waitP50 } from '../components/regions/figures.js';
import { PeersTable } from '../components/regions/peers-table.js';
import { api } from '../lib/api.js';
import { num } from '../lib/format.js';
import { usePoll } from '../lib/use-poll.js';

function ThisRegion({ self }: { self: RegionView }) {
  return (
    <>
      <Section title="This region">
        <Facts
          label="This region"
          items={[
            ['Name', <strong key="n" data-testid="region-name">{self.region}</strong>],
            [
              'Key fingerprint',
              <span key="k" className="id" data-testid="region-key" title="Peers pin this key: gpux region peer add URL --key FINGERPRINT">
                {self.keyFingerprint}
              </span>,
            ],
            ['Queued jobs', <span key="q" data-testid="region-queued">{num(self.summary.queueDepth)}</span>],
            ['Placement wait (p50)', <span key="w" data-testid="region-wait" title="Median wait from submission to first placement over the last hour">{waitP50(self.summary)}</span>],
          ]}
        />
      </Section>
      <Section title="Capacity and prices">
        <ClassTable summary={self.summary} />
      </Section>
    </>
  );
}

export function Regions() {
  const res = usePoll((signal) => api<ListPeersResponse>('/v1/federation/peers', { signal }), []);
  const clearing = usePoll((signal) => api<RegionBalanceResponse>('/v1/federation/balance', { signal }), []);
  const d = res.data;
  const now = res.updatedAt ?? Date.now();
  return (
    <Page title="Regions" subtitle="This coordinator’s region, the peer regions it exchanges signed summaries and jobs with, and what each owes the other." updatedAt={res.updatedAt}>
      {res.error ? <ErrorNote error={res.error} /> : null}
      {!d ? (
        <p className="muted">Loading…</p>
      ) : (
        <>
          <div className="grid two">
            <ThisRegion self={d.self} />
            <Section title="Peers" wide>
              <PeersTable peers={d.peers} now={now} />
            </Section>
            <Section title="Clearing" wide>
              {clearing.error ? <ErrorNote error={clearing.error} /> : null}
              {clearing.data ? <ClearingTable balances={clearing.data.balances} /> : clearing.error ? null : <p className="muted">Loading…</p>}
              <p className="muted small table-note" data-testid="clearing-note">
                A job forwarded to a peer is billed to its buyer here and owed to the peer; one a peer forwards here is owed by the peer. Positive: this region
                owes the peer; negative: the peer owes this region. Each balance nets to zero with the peer’s own balance once open jobs end. The same in a
                terminal: <code>gpux region balance</code>.
              </p>
            </Section>
          </div>
          <p className="muted small table-note">
            Free GPUs are on live, schedulable nodes that no job holds; index prices are per GPU-hour (the cpu class per job-hour). A peer’s figures are its last
            signed summary. The same in a terminal: <code>gpux region list</code>.
          </p>
        </>
      )}
    </Page>
  );
}

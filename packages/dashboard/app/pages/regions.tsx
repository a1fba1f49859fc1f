/**
 * Regions (operators, issue 15): this coordinator's region with its key and its own summary, and the peer regions
 * it exchanges signed summaries with: their health, capacity and prices (GET /v1/federation/peers). Jobs are not
 * forwarded between regions yet, so nothing here counts jobs sent or received.
 */
import type { ListPeersResponse, RegionView } from '@gpux/protocol';
import { Facts } from '../components/bits.js';
import { ErrorNote, Page, Section } from '../components/page.js';
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
  const d = res.data;
  const now = res.updatedAt ?? Date.now();
  return (
    <Page title="Regions" subtitle="This coordinator’s region and the peer regions it exchanges signed summaries with." updatedAt={res.updatedAt}>
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
          </div>
          <p className="muted small table-note">
            Free GPUs are on live, schedulable nodes that no job holds; index prices are per GPU-hour (the cpu class per job-hour). A peer’s figures are its last
            signed summary. Jobs are not sent to or received from other regions yet: summaries are information only. The same in a terminal:{' '}
            <code>gpux region list</code>.
          </p>
        </>
      )}
    </Page>
  );
}

/**
 * The signed-in account as a provider (GET /v1/provider/status, issue 16): its nodes with their stake and pay,
 * its asks, and its earnings paid and held. Any account may be a provider, so every account sees this page.
 */
import type { ProviderEarnings, ProviderStatusResponse } from '@gpux/protocol';
import { StateBadge, Stat } from '../components/bits.js';
import { NotYet } from '../components/not-yet.js';
import { ErrorNote, Page, Section } from '../components/page.js';
import { provenLabel } from '../components/proof.js';
import { AsksTable } from '../components/provider/asks-table.js';
import { api } from '../lib/api.js';
import { useFeature } from '../lib/features.js';
import { ago, dateTime, money, shortId } from '../lib/format.js';
import { gpuSummary, nodeState } from '../lib/nodes.js';
import { usePoll } from '../lib/use-poll.js';

function Earnings({ rows }: { rows: readonly ProviderEarnings[] }) {
  const shown = rows.filter((e) => e.asset === 'usdc' || e.paid + e.held + e.available > 0);
  return (
    <div data-testid="provider-earnings">
      {shown.map((e) => (
        <div className="stats" key={e.asset} data-asset={e.asset}>
          <Stat label={`${e.asset.toUpperCase()} paid`} value={<span data-field="paid" data-minor={e.paid}>{money(e.paid, e.asset)}</span>} sub="Reached your wallet: settlements and released pay" />
          <Stat
            label={`${e.asset.toUpperCase()} held`}
            value={<span data-field="held" data-minor={e.held}>{money(e.held, e.asset)}</span>}
            sub={e.heldJobs ? `${e.heldJobs} job${e.heldJobs === 1 ? '' : 's'} waiting for an audit or the dispute window${e.nextWindowClosesAt ? `; the next by ${dateTime(e.nextWindowClosesAt)}` : ''}` : 'Nothing waits for verification'}
          />
          <Stat label={`${e.asset.toUpperCase()} wallet`} value={<span data-field="available" data-minor={e.available}>{money(e.available, e.asset)}</span>} sub="Withdrawable; stake comes from it" />
        </div>
      ))}
    </div>
  );
}

function Live() {
  const res = usePoll((signal) => api<ProviderStatusResponse>('/v1/provider/status', { signal }), []);
  const s = res.data;
  const now = res.updatedAt ?? Date.now();
  return (
    <Page title="Provider" subtitle="Your nodes, their stake, your asks and what they earned." updatedAt={res.updatedAt}>
      {res.error ? <ErrorNote error={res.error} /> : null}
      {!s ? (
        <p className="muted">Loading…</p>
      ) : (
        <>
          {s.market ? <Earnings rows={s.earnings} /> : <p className="muted">This coordinator runs without a market: nodes are not staked or paid.</p>}
          <div className="grid two">
            <Section title="Your nodes" wide>
              {s.nodes.length === 0 ? (
                <p className="empty-note" data-testid="provider-no-nodes">
                  You have no nodes yet. Create an enrollment token with <code>gpux enrollment create --name NAME</code>, then run{' '}
                  <code>gpux node start --enrollment-token gpux_enroll_…</code> on the GPU machine; stake it with <code>gpux wallet deposit AMOUNT</code> and{' '}
                  <code>gpux node stake add NODE AMOUNT</code>.
                </p>
              ) : (
                <div className="table-wrap">
                  <table className="data" data-testid="provider-nodes">
                    <caption>
                      {s.nodes.length} node{s.nodes.length === 1 ? '' : 's'}
                      {s.truncated ? ' (the first ones)' : ''}
                    </caption>
                    <thead>
                      <tr>
                        <th scope="col">Node</th>
                        <th scope="col">State</th>
                        <th scope="col">GPUs</th>
                        <th scope="col" className="hide-sm">
                          Proven
                        </th>
                        <th scope="col" className="num">
                          Stake free
                        </th>
                        <th scope="col" className="num hide-sm">
                          Locked
                        </th>
                        <th scope="col" className="num">
                          Paid
                        </th>
                        <th scope="col" className="hide-md">
                          Last heartbeat
                        </th>
                      </tr>
                    </thead>
                    <tbody>
                      {s.nodes.map(({ node: n, stake, paid }) => (
                        <tr key={n.id} data-node-id={n.id}>
                          <th scope="row">
                            {n.advertisement.hostname}
                            <span className="id id-line">{shortId(n.id, 18)}</span>
                          </th>
                          <td>
                            <StateBadge state={nodeState(n)} />
                          </td>
                          <td>{gpuSummary(n)}</td>
                          <td className="hide-sm">{provenLabel(n)}</td>
                          <td className="num" data-field="stake-free" data-minor={stake.free}>
                            {money(stake.free, stake.asset)}
                          </td>
                          <td className="num hide-sm" data-field="stake-locked" data-minor={stake.locked}>
                            {money(stake.locked, stake.asset)}
                          </td>
                          <td className="num" data-field="paid">
                            {paid.length ? paid.map((p) => money(p.amount, p.asset)).join(', ') : '—'}
                          </td>
                          <td className="hide-md">{ago(n.lastHeartbeatAt, now)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </Section>
            {s.market ? (
              <Section title="Your asks">
                <AsksTable asks={s.asks} whose="your" />
              </Section>
            ) : null}
          </div>
          <p className="muted small table-note">
            The same in a terminal: <code>gpux provider status</code>. Withdraw with <code>gpux wallet withdraw AMOUNT --to …</code>.
          </p>
        </>
      )}
    </Page>
  );
}

export function Provider() {
  const has = useFeature('providerStatus');
  if (has) return <Live />;
  return <Page title="Provider" live={false}>{has === undefined ? <p className="muted">Checking the API…</p> : <NotYet feature="providerStatus" what="your provider status" />}</Page>;
}

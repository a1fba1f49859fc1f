/** One node (operators): hardware, state, reputation, stake, proof of hardware and trust tier, earnings and its provider's asks, recent jobs. */
import type { AttemptView, GetJobResponse, GetNodeResponse, JobView, ListJobsResponse, ProviderStatusResponse, StakeResponse } from '@gpux/protocol';
import { Facts, Meter, StateBadge } from '../components/bits.js';
import { Optional } from '../components/not-yet.js';
import { ErrorNote, Page, Section } from '../components/page.js';
import { ProofPanel } from '../components/proof.js';
import { AsksTable } from '../components/provider/asks-table.js';
import { ReputationPanel } from '../components/verification.js';
import { ApiError, api } from '../lib/api.js';
import { ago, dateTime, mb, money } from '../lib/format.js';
import { gpuSummary, nodeState } from '../lib/nodes.js';
import { Link } from '../lib/router.js';
import { usePoll } from '../lib/use-poll.js';

/** The API has no per-node job listing yet: look through the network's newest jobs for this node's attempts. */
const SCAN_JOBS = 100;
const SCAN_EVERY_MS = 10_000;

async function recentOnNode(nodeId: string, signal: AbortSignal): Promise<Array<{ job: JobView; attempt: AttemptView }>> {
  const { jobs } = await api<ListJobsResponse>(`/v1/jobs?limit=${SCAN_JOBS}`, { signal });
  const placed = jobs.filter((j) => j.attemptCount > 0);
  const found: Array<{ job: JobView; attempt: AttemptView }> = [];
  // A few requests at a time: loopback is fast, but the coordinator serves others too.
  for (let i = 0; i < placed.length; i += 6) {
    const details = await Promise.all(placed.slice(i, i + 6).map((j) => api<GetJobResponse>(`/v1/jobs/${encodeURIComponent(j.id)}`, { signal })));
    for (const d of details) for (const a of d.attempts) if (a.nodeId === nodeId) found.push({ job: d.job, attempt: a });
  }
  return found.sort((a, b) => b.attempt.createdAt - a.attempt.createdAt).slice(0, 10);
}

/** The node's stake: what backs its results (a node takes a job only while its free stake covers 20× the job's price). */
function StakeFacts({ data }: { data: StakeResponse }) {
  const s = data.stake;
  const m = (n: number) => money(n, s.asset);
  return (
    <Facts
      label="Stake"
      items={[
        ['Bonded', <span key="b" data-testid="stake-bonded">{m(s.staked)}</span>],
        ['Locked by running work', m(s.locked)],
        ['Free', m(s.free)],
        ['Unbonding', s.unbonding.length ? s.unbonding.map((u) => `${m(u.amount)} on ${dateTime(u.releaseAt)}`).join('; ') : 'none'],
      ]}
    />
  );
}

/** What the node earned (pay that reached its provider's wallet for its work) and its provider's asks. */
function NodePay({ data, nodeId }: { data: ProviderStatusResponse; nodeId: string }) {
  if (!data.market) return <p className="muted">This coordinator runs without a market: nodes are not paid.</p>;
  const paid = data.nodes.find((x) => x.node.id === nodeId)?.paid ?? [];
  return (
    <>
      <Facts
        label="Earnings"
        items={[
          ['Paid to its provider', <span key="p" data-testid="node-paid">{paid.length ? paid.map((x) => money(x.amount, x.asset)).join(', ') : money(0, 'usdc')}</span>],
          ['Provider held, all nodes', data.earnings.filter((e) => e.held > 0).map((e) => money(e.held, e.asset)).join(', ') || 'nothing'],
        ]}
      />
      <h3 className="sub-h">Its provider’s asks</h3>
      <AsksTable asks={data.asks} whose="its provider’s" />
    </>
  );
}

export function NodeDetail({ id }: { id: string }) {
  const res = usePoll((signal) => api<GetNodeResponse>(`/v1/nodes/${encodeURIComponent(id)}`, { signal }), [id]);
  const recent = usePoll((signal) => recentOnNode(id, signal), [id], SCAN_EVERY_MS);
  const n = res.data?.node;
  if (!n) {
    const missing = res.error instanceof ApiError && res.error.status === 404;
    return <Page title={missing ? 'Node not found' : 'Node'}>{missing ? <p>There is no node {id}.</p> : res.error ? <ErrorNote error={res.error} /> : <p className="muted">Loading…</p>}</Page>;
  }
  const ad = n.advertisement;
  const now = res.updatedAt ?? Date.now();
  return (
    <Page
      title={ad.hostname}
      subtitle={
        <>
          <span className="id">{n.id}</span> <StateBadge state={nodeState(n)} /> {n.simulated ? <span className="badge st-simulated">simulated</span> : null}
        </>
      }
      updatedAt={res.updatedAt}
    >
      <div className="grid two">
        <Section title="Hardware">
          <Facts
            label="Hardware"
            items={[
              ['GPUs', gpuSummary(n)],
              ['CPU cores', ad.cpuCores],
              ['Memory', mb(ad.memoryMb)],
              ['OS / arch', `${ad.os} / ${ad.arch}`],
              ['Executors', ad.executors.join(', ')],
              ['Docker', ad.docker.available ? `${ad.docker.version ?? 'available'} (GPU runtime: ${ad.docker.gpuRuntime})` : (ad.docker.problem ?? 'not available')],
              ['Agent', ad.agentVersion],
              ['Region', ad.region ?? '—'],
              ['Labels', Object.keys(ad.labels).length ? Object.entries(ad.labels).map(([k, v]) => `${k}=${v}`).join(', ') : '—'],
            ]}
          />
        </Section>
        <Section title="Now">
          <Facts
            label="Current state"
            items={[
              ['Status', n.status],
              ['Admin state', `${n.adminState}${n.drained ? ' (drained)' : ''}`],
              [
                'GPUs busy',
                n.gpusTotal ? (
                  <span key="m" className="meter-line">
                    <Meter busy={n.gpusBusy} free={n.gpusTotal - n.gpusBusy} label="GPUs on this node" />
                    <span>
                      {n.gpusBusy} of {n.gpusTotal}
                    </span>
                  </span>
                ) : (
                  'no GPUs'
                ),
              ],
              ['Active attempts', n.activeAttempts],
              ['Last heartbeat', ago(n.lastHeartbeatAt, now)],
              ['Registered', dateTime(n.registeredAt)],
              ['Provider', n.providerId === undefined ? undefined : n.providerId === null ? 'none: not paid for market jobs' : <span key="p" className="id">{n.providerId}</span>],
            ]}
          />
        </Section>
        {ad.gpus.length ? (
          <Section title="GPUs" wide>
            <div className="table-wrap">
              <table>
                <caption className="sr-only">GPUs of this node</caption>
                <thead>
                  <tr>
                    <th scope="col" className="num">
                      #
                    </th>
                    <th scope="col">Model</th>
                    <th scope="col" className="num">
                      Memory
                    </th>
                    <th scope="col" className="hide-sm">
                      Compute
                    </th>
                    <th scope="col" className="hide-sm">
                      Driver
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {ad.gpus.map((g) => (
                    <tr key={g.uuid}>
                      <td className="num">{g.index}</td>
                      <th scope="row">{g.model}</th>
                      <td className="num">{mb(g.vramMb)}</td>
                      <td className="hide-sm">{g.computeCapability ?? '—'}</td>
                      <td className="hide-sm">{g.driver ?? '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </Section>
        ) : null}
        <Section title="Reputation">
          <ReputationPanel node={n} />
        </Section>
        <Section title="Stake">
          <Optional feature="nodeStake" what="this node's stake" id={n.id} render={(d) => <StakeFacts data={d as StakeResponse} />} />
        </Section>
        <Section title="Proof of hardware">
          <ProofPanel node={n} />
        </Section>
        <Section title="Earnings and asks">
          {n.providerId ? (
            <Optional
              feature="providerStatus"
              what="this node's earnings and its provider's asks"
              search={`?accountId=${encodeURIComponent(n.providerId)}`}
              render={(d) => <NodePay data={d as ProviderStatusResponse} nodeId={n.id} />}
            />
          ) : (
            <p className="muted">No provider: the node is not paid for market jobs and has no asks.</p>
          )}
        </Section>
        <Section title="Recent jobs" wide>
          <p className="muted small">Attempts on this node among the network’s {SCAN_JOBS} newest jobs.</p>
          {recent.error ? <ErrorNote error={recent.error} /> : null}
          {!recent.data ? (
            <p className="muted">Loading…</p>
          ) : recent.data.length === 0 ? (
            <p className="muted">None.</p>
          ) : (
            <ul className="recent" data-testid="node-recent-jobs">
              {recent.data.map(({ job, attempt }) => (
                <li key={attempt.id}>
                  <Link to={`/jobs/${encodeURIComponent(job.id)}`}>{job.name}</Link>
                  <StateBadge state={attempt.state} />
                  <span className="muted small">{ago(attempt.createdAt, now)}</span>
                </li>
              ))}
            </ul>
          )}
        </Section>
      </div>
    </Page>
  );
}

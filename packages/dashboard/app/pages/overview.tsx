/** Overview: the network at a glance (GET /v1/stats), live. */
import type { JobState, ListJobsResponse, MarketPricesResponse, StatsResponse } from '@gpux/protocol';
import { Meter, Stat, StateBadge } from '../components/bits.js';
import type { Account } from '../components/layout.js';
import { PriceSummary } from '../components/market/price-table.js';
import { Optional } from '../components/not-yet.js';
import { ErrorNote, Page, Section } from '../components/page.js';
import { Sparkline } from '../components/sparkline.js';
import { api } from '../lib/api.js';
import { ago, num, percent } from '../lib/format.js';
import { Link } from '../lib/router.js';
import { seriesOf, useHistory } from '../lib/use-history.js';
import { usePoll } from '../lib/use-poll.js';

const STATES: JobState[] = ['queued', 'assigned', 'running', 'succeeded', 'failed', 'cancelled'];

function readings(s: StatsResponse): Record<string, number> {
  const r: Record<string, number> = {
    online: s.nodes.online,
    busy: s.gpus.busy,
    active: s.jobs.byState.running + s.jobs.byState.assigned,
    queued: s.jobs.byState.queued,
    rate: s.placements.perMinute,
  };
  for (const c of s.gpus.byClass) r[`class:${c.class}`] = c.busy;
  return r;
}

export function Overview({ account }: { account: Account }) {
  const stats = usePoll((signal) => api<StatsResponse>('/v1/stats', { signal }), []);
  const recent = usePoll((signal) => api<ListJobsResponse>('/v1/jobs?limit=6', { signal }), []);
  const s = stats.data;
  const history = useHistory(s?.at, s ? readings(s) : undefined);

  return (
    <Page title="Overview" subtitle={account.role === 'operator' ? 'The whole network, live.' : 'The network, live. Job counts are network-wide; your jobs are listed below.'} updatedAt={stats.updatedAt}>
      {stats.error ? <ErrorNote error={stats.error} /> : null}
      {!s ? (
        <p className="muted">Loading…</p>
      ) : (
        <>
          <div className="stats" data-testid="overview-stats">
            <Stat label="Nodes online" value={<span data-testid="nodes-online">{num(s.nodes.online)}</span>} sub={`of ${num(s.nodes.total)} · ${num(s.nodes.offline)} offline · ${num(s.nodes.cordoned)} cordoned`}>
              <Sparkline values={seriesOf(history, 'online')} label="Nodes online" />
            </Stat>
            <Stat
              label="GPUs in use"
              value={
                <>
                  <span data-testid="gpus-busy">{num(s.gpus.busy)}</span>
                  <span className="of"> / {num(s.gpus.total)}</span>
                </>
              }
              sub={`${percent(s.gpus.busy, s.gpus.total)} busy · ${num(s.gpus.free)} free`}
            >
              <Sparkline values={seriesOf(history, 'busy')} label="GPUs in use" />
            </Stat>
            <Stat label="Jobs running" value={<span data-testid="jobs-active">{num(s.jobs.byState.running + s.jobs.byState.assigned)}</span>} sub={`${num(s.jobs.byState.queued)} queued · ${num(s.jobs.total)} in all`}>
              <Sparkline values={seriesOf(history, 'active')} label="Jobs running or assigned" />
            </Stat>
            <Stat label="Placements / min" value={<span data-testid="placements-rate">{s.placements.perMinute}</span>} sub={`${num(s.placements.total)} since the coordinator started`}>
              <Sparkline values={seriesOf(history, 'rate')} label="Placements per minute" />
            </Stat>
          </div>

          <div className="grid">
            <Section title="GPUs by class" wide>
              {s.gpus.byClass.length === 0 ? (
                <p className="muted">No GPUs online. CPU-only nodes still run jobs that ask for no GPU.</p>
              ) : (
                <div className="table-wrap">
                  <table data-testid="gpu-classes">
                    <caption className="sr-only">GPUs on online nodes by class: busy, free and unavailable</caption>
                    <thead>
                      <tr>
                        <th scope="col">Class</th>
                        <th scope="col" className="num">
                          Nodes
                        </th>
                        <th scope="col">In use</th>
                        <th scope="col" className="num">
                          Busy
                        </th>
                        <th scope="col" className="num">
                          Free
                        </th>
                        <th scope="col" className="num hide-sm">
                          Total
                        </th>
                        <th scope="col" className="hide-sm">
                          Trend
                        </th>
                      </tr>
                    </thead>
                    <tbody>
                      {s.gpus.byClass.map((c) => (
                        <tr key={c.class}>
                          <th scope="row">
                            {c.class}
                            <span className="vendor">{c.vendor}</span>
                          </th>
                          <td className="num">{num(c.nodes)}</td>
                          <td className="meter-cell">
                            <Meter busy={c.busy} free={c.free} unavailable={c.unavailable} label={c.class} />
                          </td>
                          <td className="num">{num(c.busy)}</td>
                          <td className="num">{num(c.free)}</td>
                          <td className="num hide-sm">{num(c.total)}</td>
                          <td className="hide-sm">
                            <Sparkline values={seriesOf(history, `class:${c.class}`)} label={`${c.class} GPUs busy`} width={96} height={24} />
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </Section>

            <Section title="Jobs by state">
              <JobStates byState={s.jobs.byState} total={s.jobs.total} />
            </Section>

            <Section title="Recent jobs">
              {recent.error ? <ErrorNote error={recent.error} /> : null}
              {recent.data && recent.data.jobs.length === 0 ? <p className="muted">No jobs yet.</p> : null}
              <ul className="recent" data-testid="recent-jobs">
                {recent.data?.jobs.map((j) => (
                  <li key={j.id}>
                    <Link to={`/jobs/${encodeURIComponent(j.id)}`}>{j.name}</Link>
                    <StateBadge state={j.state} />
                    <span className="muted small">{ago(j.updatedAt, s.at)}</span>
                  </li>
                ))}
              </ul>
              <p>
                <Link to="/jobs">All jobs →</Link>
              </p>
            </Section>

            <Section title="Price per GPU-hour">
              <Optional feature="prices" what="the current price per GPU class" render={(d) => <Prices data={d as MarketPricesResponse} />} />
            </Section>
          </div>
        </>
      )}
    </Page>
  );
}

function JobStates({ byState, total }: { byState: Record<JobState, number>; total: number }) {
  const most = Math.max(1, ...STATES.map((st) => byState[st]));
  return (
    <ul className="state-list" data-testid="jobs-by-state" aria-label={`${total} jobs by state`}>
      {STATES.map((st) => (
        <li key={st}>
          <Link to={`/jobs?state=${st}`} aria-label={`${st}: ${byState[st]} jobs`}>
            <StateBadge state={st} />
          </Link>
          <span className="state-bar" aria-hidden="true">
            <span className={`seg st-${st}`} style={{ width: `${(byState[st] / most) * 100}%` }} />
          </span>
          <span className="count" data-state={st}>
            {num(byState[st])}
          </span>
        </li>
      ))}
    </ul>
  );
}

function Prices({ data }: { data: MarketPricesResponse }) {
  if (!data.market) return <p className="muted">This coordinator runs without a market: jobs are free.</p>;
  return (
    <>
      <PriceSummary data={data} />
      <p>
        <Link to="/market">Market →</Link>
      </p>
    </>
  );
}

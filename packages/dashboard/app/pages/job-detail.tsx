/** One job: summary, why it waits (explain), timeline of events, attempts, live logs, bill. */
import { type ReactNode, useState } from 'react';
import type { EventView, ExplainJobResponse, GetJobResponse } from '@gpux/protocol';
import { Facts, StateBadge } from '../components/bits.js';
import { Explain } from '../components/explain.js';
import { JobLogs } from '../components/job-logs.js';
import type { Account } from '../components/layout.js';
import { Optional } from '../components/not-yet.js';
import { ErrorNote, Page, Section } from '../components/page.js';
import { ApiError, api } from '../lib/api.js';
import { dateTime, duration, shortId, timeOfDay } from '../lib/format.js';
import { gpuAsk, runtime } from '../lib/jobs.js';
import { Link } from '../lib/router.js';
import { usePoll } from '../lib/use-poll.js';

const TERMINAL = ['succeeded', 'failed', 'cancelled'];

export function JobDetail({ id, account }: { id: string; account: Account }) {
  const res = usePoll((signal) => api<GetJobResponse>(`/v1/jobs/${encodeURIComponent(id)}`, { signal }), [id]);
  const [cancelError, setCancelError] = useState<unknown>(null);
  const data = res.data;
  if (!data) {
    const missing = res.error instanceof ApiError && res.error.status === 404;
    return (
      <Page title={missing ? 'Job not found' : 'Job'} updatedAt={res.updatedAt}>
        {missing ? <p>There is no job {id} that this account can see.</p> : res.error ? <ErrorNote error={res.error} /> : <p className="muted">Loading…</p>}
      </Page>
    );
  }
  const { job, attempts, events } = data;
  const now = res.updatedAt ?? Date.now();
  const cancel = async () => {
    setCancelError(null);
    try {
      await api(`/v1/jobs/${encodeURIComponent(id)}/cancel`, { method: 'POST' });
      res.refresh();
    } catch (e) {
      setCancelError(e);
    }
  };
  const canCancel = !TERMINAL.includes(job.state) && !job.cancelRequested;

  return (
    <Page
      title={job.name}
      subtitle={
        <>
          <span className="id">{job.id}</span> <StateBadge state={job.state} />
          {job.cancelRequested && !TERMINAL.includes(job.state) ? <span className="muted"> cancel requested</span> : null}
        </>
      }
      actions={
        canCancel ? (
          <button type="button" className="btn-danger" onClick={cancel}>
            Cancel job
          </button>
        ) : null
      }
      updatedAt={res.updatedAt}
    >
      {cancelError ? <ErrorNote error={cancelError} /> : null}
      <div className="grid two">
        <Section title="Summary">
          <Facts
            label="Job summary"
            items={[
              ['State', <StateBadge key="s" state={job.state} />],
              ['Image', <code key="i">{job.spec.image}</code>],
              ['Command', <code key="c">{[...job.spec.command, ...job.spec.args].join(' ')}</code>],
              ['Resources', gpuAsk(job)],
              ['Submitted', dateTime(job.createdAt)],
              ['Started', dateTime(job.startedAt)],
              ['Finished', dateTime(job.finishedAt)],
              ['Runtime', runtime(job, now)],
              ['Exit code', job.exitCode ?? '—'],
              ['Error', job.error],
              ['Attempts', `${job.attemptCount} (up to ${job.spec.maxRetries + 1})`],
              ...(account.role === 'operator' ? ([['Buyer', <span key="b" className="id">{job.buyerId}</span>]] as Array<[string, ReactNode]>) : []),
            ]}
          />
        </Section>

        {job.state === 'queued' ? (
          <Section title="Why it is waiting">
            {job.runAfter && job.runAfter > now ? <p>Retry backoff: it may be placed again in {duration(job.runAfter - now)}.</p> : null}
            <Optional feature="explain" what="the scheduler's explanation of a pending job" id={job.id} render={(d) => <Explain data={d as ExplainJobResponse} />} />
          </Section>
        ) : null}

        <Section title="Timeline">
          <Timeline events={events} />
        </Section>

        <Section title="Attempts" wide>
          {attempts.length === 0 ? (
            <p className="muted">No attempt yet: the job has not been placed on a node.</p>
          ) : (
            <div className="table-wrap">
              <table data-testid="attempts">
                <caption className="sr-only">Attempts of this job</caption>
                <thead>
                  <tr>
                    <th scope="col" className="hide-sm">
                      Attempt
                    </th>
                    <th scope="col">Node</th>
                    <th scope="col">State</th>
                    <th scope="col" className="hide-sm">
                      GPUs
                    </th>
                    <th scope="col" className="hide-sm">
                      Duration
                    </th>
                    <th scope="col">Exit</th>
                    <th scope="col" className="hide-sm">
                      Error
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {attempts.map((a) => (
                    <tr key={a.id}>
                      <th scope="row" className="id hide-sm" title={a.id}>
                        {shortId(a.id, 18)}
                      </th>
                      <td className="id">
                        {account.role === 'operator' ? (
                          <Link to={`/nodes/${encodeURIComponent(a.nodeId)}`} title={a.nodeId}>
                            {shortId(a.nodeId)}
                          </Link>
                        ) : (
                          <span title={a.nodeId}>{shortId(a.nodeId)}</span>
                        )}
                      </td>
                      <td>
                        <StateBadge state={a.state} />
                      </td>
                      <td className="hide-sm">{a.gpuIndices.length ? a.gpuIndices.join(', ') : '—'}</td>
                      <td className="hide-sm">{a.startedAt ? duration((a.finishedAt ?? now) - a.startedAt) : '—'}</td>
                      <td>{a.exitCode ?? '—'}</td>
                      <td className="hide-sm">{a.error ?? '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </Section>

        <Section title="Logs" wide>
          <JobLogs jobId={job.id} />
        </Section>

        <Section title="Bill">
          <Optional feature="bill" what="the job's bill" id={job.id} />
        </Section>
      </div>
    </Page>
  );
}

/** Keys of event data that add nothing a reader needs on the job page. */
const QUIET_KEYS = new Set(['idempotencyKey', 'buyerId', 'name']);

/** Event details worth a line: ids, outcomes and reasons; times as times. */
function detail(e: EventView): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(e.data)) {
    if (v === null || v === undefined || typeof v === 'object' || QUIET_KEYS.has(k)) continue;
    parts.push(`${k}: ${k.endsWith('At') && typeof v === 'number' ? timeOfDay(v) : String(v)}`);
  }
  return parts.slice(0, 5).join(' · ');
}

function Timeline({ events }: { events: EventView[] }) {
  if (events.length === 0) return <p className="muted">No events.</p>;
  return (
    <ol className="timeline" data-testid="timeline">
      {events.map((e) => (
        <li key={e.seq}>
          <time dateTime={new Date(e.at).toISOString()} title={dateTime(e.at)}>
            {timeOfDay(e.at)}
          </time>
          <span className="ev-type">{e.type}</span>
          <span className="ev-detail">{detail(e)}</span>
        </li>
      ))}
    </ol>
  );
}

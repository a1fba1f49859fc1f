/** One job: summary, why it waits (explain), timeline of events, attempts with their prices, live logs, bill. */
import { type ReactNode, useState } from 'react';
import type { BillResponse, ExplainJobResponse, GetJobResponse } from '@gpux/protocol';
import { AttemptsTable } from '../components/attempts-table.js';
import { Facts, StateBadge } from '../components/bits.js';
import { Explain } from '../components/explain.js';
import { JobLogs } from '../components/job-logs.js';
import type { Account } from '../components/layout.js';
import { Bill } from '../components/market/bill.js';
import { Optional } from '../components/not-yet.js';
import { predictionFacts } from '../components/prediction.js';
import { ErrorNote, Page, Section } from '../components/page.js';
import { Timeline } from '../components/timeline.js';
import { VerificationPanel } from '../components/verification.js';
import { ApiError, api } from '../lib/api.js';
import { dateTime, duration, money } from '../lib/format.js';
import { gpuAsk, runtime } from '../lib/jobs.js';
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
  const perUnit = job.spec.resources.gpu.count ? 'GPU-hour' : 'job-hour';
  const pay = job.payment;

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
              ...(data.prediction ? predictionFacts(data.prediction) : []),
              ...(pay
                ? ([
                    ['Pays at most', `${money(pay.capPerUnitHour, pay.asset)} per ${perUnit}`],
                    ['Held at submission', money(pay.held, pay.asset)],
                  ] as Array<[string, ReactNode]>)
                : []),
              ...(account.role === 'operator' ? ([['Buyer', <span key="b" className="id">{job.buyerId}</span>]] as Array<[string, ReactNode]>) : []),
            ]}
          />
        </Section>

        {job.verification ? (
          <Section title="Verification">
            <VerificationPanel v={job.verification} jobId={job.id} />
          </Section>
        ) : null}

        {job.state === 'queued' ? (
          <Section title="Why it is waiting">
            {job.runAfter && job.runAfter > now ? <p>Retry backoff: it may be placed again in {duration(job.runAfter - now)}.</p> : null}
            <Optional feature="explain" what="the scheduler's explanation of a pending job" id={job.id} render={(d) => <Explain data={d as ExplainJobResponse} />} />
          </Section>
        ) : null}

        <Section title="Timeline">
          <Timeline events={events} />
          {data.nodeEventsElided ? <p className="muted">{data.nodeEventsElided} image-pull events reported by the node are not shown.</p> : null}
          {data.moreEventsBefore !== null && data.moreEventsBefore !== undefined ? (
            <p className="muted">
              Older events are not shown: <code>gpux job get {job.id} --events-before {data.moreEventsBefore}</code>
            </p>
          ) : null}
        </Section>

        <Section title="Attempts" wide>
          <AttemptsTable attempts={attempts} linkNodes={account.role === 'operator'} perUnit={perUnit} now={now} />
        </Section>

        <Section title="Bill" wide>
          {job.payment === null ? (
            <p className="muted">This job runs free: the coordinator runs without a market.</p>
          ) : (
            <Optional feature="bill" what="the job's bill" id={job.id} render={(d) => <Bill data={d as BillResponse} perUnit={perUnit} />} />
          )}
        </Section>

        <Section title="Logs" wide>
          <JobLogs jobId={job.id} />
        </Section>
      </div>
    </Page>
  );
}

/** Jobs: a live table with filters (state on the server, text search here). Buyers see only their own jobs. */
import { useState } from 'react';
import type { JobState, ListJobsResponse } from '@gpux/protocol';
import { StateBadge } from '../components/bits.js';
import type { Account } from '../components/layout.js';
import { ErrorNote, Page } from '../components/page.js';
import { VerificationBadge } from '../components/verification.js';
import { api, query } from '../lib/api.js';
import { ago, shortId } from '../lib/format.js';
import { gpuAsk, runtime } from '../lib/jobs.js';
import { Link, navigate, useLocation } from '../lib/router.js';
import { usePoll } from '../lib/use-poll.js';

const STATES: JobState[] = ['queued', 'assigned', 'running', 'succeeded', 'failed', 'cancelled'];
const PAGE = 100;
const MAX = 500;

export function Jobs({ account }: { account: Account }) {
  const { search } = useLocation();
  const stateParam = search.get('state') ?? '';
  const state = STATES.includes(stateParam as JobState) ? stateParam : '';
  const [text, setText] = useState('');
  const [limit, setLimit] = useState(PAGE);
  const jobs = usePoll((signal) => api<ListJobsResponse>(`/v1/jobs${query({ state, limit })}`, { signal }), [state, limit]);
  const now = jobs.updatedAt ?? Date.now();
  const needle = text.trim().toLowerCase();
  const rows = (jobs.data?.jobs ?? []).filter((j) => !needle || j.name.toLowerCase().includes(needle) || j.id.toLowerCase().includes(needle) || j.buyerId.toLowerCase().includes(needle));
  const operator = account.role === 'operator';

  return (
    <Page title="Jobs" subtitle={operator ? 'Every buyer’s jobs, newest first.' : 'Your jobs, newest first.'} updatedAt={jobs.updatedAt}>
      <search className="filters" aria-label="Filter jobs">
        <div className="field">
          <label htmlFor="job-search">Search</label>
          <input id="job-search" type="search" placeholder={operator ? 'Name, job id or buyer' : 'Name or job id'} value={text} onChange={(e) => setText(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="job-state">State</label>
          <select id="job-state" value={state} onChange={(e) => navigate(`/jobs${query({ state: e.target.value })}`, { replace: true })}>
            <option value="">All states</option>
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
      </search>
      {jobs.error ? <ErrorNote error={jobs.error} /> : null}
      <div className="card flush">
        <div className="table-wrap">
          <table className="data" data-testid="jobs-table">
            <caption>
              {jobs.data ? `${rows.length} job${rows.length === 1 ? '' : 's'}${state ? ` ${state}` : ''}${needle ? ` matching “${text.trim()}”` : ''}` : 'Loading jobs…'}
            </caption>
            <thead>
              <tr>
                <th scope="col">Job</th>
                <th scope="col">State</th>
                <th scope="col" className="hide-sm">
                  Resources
                </th>
                <th scope="col" className="num hide-sm">
                  Attempts
                </th>
                <th scope="col">Submitted</th>
                <th scope="col" className="hide-sm">
                  Runtime
                </th>
                <th scope="col" className="hide-md">
                  Verification
                </th>
                {operator ? (
                  <th scope="col" className="hide-md">
                    Buyer
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {rows.map((j) => (
                <tr key={j.id} data-job-id={j.id}>
                  <th scope="row">
                    <Link to={`/jobs/${encodeURIComponent(j.id)}`}>{j.name}</Link>
                    <span className="id id-line" title={j.id}>
                      {shortId(j.id, 20)}
                    </span>
                  </th>
                  <td>
                    <StateBadge state={j.state} />
                  </td>
                  <td className="hide-sm">{gpuAsk(j)}</td>
                  <td className="num hide-sm">{j.attemptCount}</td>
                  <td>{ago(j.createdAt, now)}</td>
                  <td className="hide-sm">{runtime(j, now)}</td>
                  <td className="hide-md" data-field="verification">
                    {j.verification ? <VerificationBadge v={j.verification} /> : '—'}
                  </td>
                  {operator ? (
                    <td className="hide-md id" title={j.buyerId}>
                      {shortId(j.buyerId)}
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {jobs.data && rows.length === 0 ? <p className="empty-note">No jobs{state ? ` in state ${state}` : ''} yet.</p> : null}
      </div>
      {jobs.data?.nextCursor && limit < MAX ? (
        <p>
          <button type="button" className="btn-quiet" onClick={() => setLimit((l) => Math.min(MAX, l + PAGE))}>
            Show more
          </button>
        </p>
      ) : null}
    </Page>
  );
}

/** Live logs of a job: long-polls GET /v1/jobs/:id/logs (waitMs) until the job is done; keeps the newest lines. */
import { useEffect, useRef, useState } from 'react';
import type { JobLogEntry, JobLogsResponse } from '@gpux/protocol';
import { api, isAbort } from '../lib/api.js';

const KEEP = 2000;
const WAIT_MS = 20_000;

export function JobLogs({ jobId }: { jobId: string }) {
  const [entries, setEntries] = useState<JobLogEntry[]>([]);
  const [done, setDone] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const box = useRef<HTMLPreElement>(null);
  const stick = useRef(true);

  useEffect(() => {
    const ctrl = new AbortController();
    (async () => {
      let after = -1;
      while (!ctrl.signal.aborted) {
        try {
          const res = await api<JobLogsResponse>(`/v1/jobs/${encodeURIComponent(jobId)}/logs?after=${after}&limit=1000&waitMs=${WAIT_MS}`, { signal: ctrl.signal });
          setError(null);
          if (res.entries.length) setEntries((prev) => [...prev, ...res.entries].slice(-KEEP));
          after = res.next;
          if (res.done) {
            setDone(true);
            return;
          }
        } catch (e) {
          if (isAbort(e) || ctrl.signal.aborted) return;
          setError((e as Error).message);
          await new Promise((r) => setTimeout(r, 2000));
        }
      }
    })();
    return () => ctrl.abort();
  }, [jobId]);

  // Follow the tail unless the reader scrolled up.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs when new entries arrive
  useEffect(() => {
    const el = box.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [entries]);

  return (
    <>
      <p className="muted small" aria-live="polite">
        {error ? `Reconnecting: ${error}` : done ? `Complete · ${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}` : 'Following live…'}
      </p>
      <pre
        ref={box}
        className="logs"
        role="log"
        aria-label="Job logs"
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard
        tabIndex={0}
        data-testid="job-logs"
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {entries.length === 0 ? <span className="muted">{done ? 'No output.' : 'No output yet.'}</span> : null}
        {entries.map((e) => (
          <span key={e.cursor} className={`log-${e.stream}`}>
            {e.data}
          </span>
        ))}
      </pre>
    </>
  );
}

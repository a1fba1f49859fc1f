/** Demand and supply read live from GET /v1/stats while the page is open: GPUs busy per class and jobs waiting. */
import type { StatsResponse } from '@gpux/protocol';
import type { Polled } from '../../lib/use-poll.js';
import { num } from '../../lib/format.js';
import { useHistory } from '../../lib/use-history.js';
import { LineChart, type Series } from '../line-chart.js';
import { ErrorNote } from '../page.js';

const MAX_SERIES = 6;

export function SupplyChart({ stats }: { stats: Polled<StatsResponse> }) {
  const s = stats.data;
  const values: Record<string, number> | undefined = s ? Object.fromEntries(s.gpus.byClass.map((c) => [c.class, c.busy])) : undefined;
  if (s && values) values['queued jobs'] = s.jobs.byState.queued;
  const history = useHistory(s?.at, values);
  const names = s ? [...s.gpus.byClass.slice(0, MAX_SERIES - 1).map((c) => c.class), 'queued jobs'] : [];
  const series: Series[] = names.map((name) => ({ name, points: history.filter((r) => name in r.values).map((r) => ({ t: r.t, v: r.values[name] ?? 0 })) }));
  return (
    <>
      {stats.error ? <ErrorNote error={stats.error} /> : null}
      <p className="muted small">GPUs busy per model and jobs waiting, read every 2 seconds since this page opened.</p>
      <LineChart series={series} label="GPUs busy per class and queued jobs over time" />
      {s ? (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Supply per GPU model now</caption>
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col" className="num">
                  Busy
                </th>
                <th scope="col" className="num">
                  Free
                </th>
                <th scope="col" className="num">
                  Total
                </th>
              </tr>
            </thead>
            <tbody>
              {s.gpus.byClass.map((c) => (
                <tr key={c.class}>
                  <th scope="row">{c.class}</th>
                  <td className="num">{num(c.busy)}</td>
                  <td className="num">{num(c.free)}</td>
                  <td className="num">{num(c.total)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}

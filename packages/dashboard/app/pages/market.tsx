/** Market and treasury: price history per class (when the market exists), live supply and demand, the treasury for operators. */
import type { StatsResponse } from '@gpux/protocol';
import type { Account } from '../components/layout.js';
import { LineChart, type Series } from '../components/line-chart.js';
import { Optional } from '../components/not-yet.js';
import { ErrorNote, Page, Section } from '../components/page.js';
import { api } from '../lib/api.js';
import { num } from '../lib/format.js';
import { useHistory } from '../lib/use-history.js';
import { usePoll } from '../lib/use-poll.js';

const MAX_SERIES = 6;

export function Market({ account }: { account: Account }) {
  const stats = usePoll((signal) => api<StatsResponse>('/v1/stats', { signal }), []);
  const s = stats.data;
  const values: Record<string, number> | undefined = s ? Object.fromEntries(s.gpus.byClass.map((c) => [c.class, c.busy])) : undefined;
  if (s && values) values['queued jobs'] = s.jobs.byState.queued;
  const history = useHistory(s?.at, values);
  const names = s ? [...s.gpus.byClass.slice(0, MAX_SERIES - 1).map((c) => c.class), 'queued jobs'] : [];
  const series: Series[] = names.map((name) => ({ name, points: history.filter((r) => name in r.values).map((r) => ({ t: r.t, v: r.values[name] ?? 0 })) }));

  return (
    <Page title="Market" subtitle="Prices come from supply and demand per GPU class." updatedAt={stats.updatedAt}>
      <div className="grid two">
        <Section title="Price history per class" wide>
          <Optional feature="priceHistory" what="the price history per GPU class" />
        </Section>
        <Section title="Demand and supply, live" wide>
          {stats.error ? <ErrorNote error={stats.error} /> : null}
          <p className="muted small">GPUs busy per class and jobs waiting, read every 2 seconds since this page opened.</p>
          <LineChart series={series} label="GPUs busy per class and queued jobs over time" />
          {s ? (
            <div className="table-wrap">
              <table>
                <caption className="sr-only">Supply per GPU class now</caption>
                <thead>
                  <tr>
                    <th scope="col">Class</th>
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
        </Section>
        {account.role === 'operator' ? (
          <>
            <Section title="Treasury">
              <Optional feature="treasury" what="the treasury balance and fees" />
            </Section>
            <Section title="Ledger">
              <Optional feature="ledger" what="the ledger of postings" />
            </Section>
          </>
        ) : (
          <Section title="Treasury and ledger">
            <p className="muted">Shown to operators.</p>
          </Section>
        )}
      </div>
    </Page>
  );
}

/**
 * Why a pending job waits (GET /v1/jobs/:id/explain): the summary, its place in the queue, the price, what each filter
 * ruled out, what to change and (issue 15, with peers) the regions that could run it. The sentences are the
 * coordinator's, shown as they are (the CLI prints the same).
 */
import type { ExplainJobResponse } from '@gpux/protocol';
import { num } from '../lib/format.js';

export function Explain({ data }: { data: ExplainJobResponse }) {
  const filters = data.filters.filter((f) => f.rejected > 0);
  return (
    <div className="explain" data-testid="explain">
      <p className="explain-summary">{data.summary}</p>
      <ul className="explain-facts">
        {data.queuePosition !== null ? (
          <li>
            Queue: {num(data.queuePosition)} ahead{data.queuedTotal !== null ? ` of ${num(data.queuedTotal)} waiting` : ''}
          </li>
        ) : null}
        <li>
          Nodes: {num(data.nodesFitting)} fit now, {num(data.nodesBusy)} fit but are busy, of {num(data.nodesTotal)}
        </li>
        {data.price ? <li data-testid="explain-price">Price: {data.price}</li> : null}
      </ul>
      {filters.length ? (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Nodes each filter ruled out</caption>
            <thead>
              <tr>
                <th scope="col">Filter</th>
                <th scope="col" className="num">
                  Nodes ruled out
                </th>
                <th scope="col">Why</th>
              </tr>
            </thead>
            <tbody>
              {filters.map((f) => (
                <tr key={f.name}>
                  <th scope="row">{f.name}</th>
                  <td className="num">{num(f.rejected)}</td>
                  <td>{f.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {data.regions ? (
        <>
          <h3>Other regions</h3>
          <p data-testid="explain-region-choice">{data.regions.verdict.sentence}</p>
          <ul className="suggestions" data-testid="explain-regions">
            {data.regions.options.map((o) => (
              <li key={`${o.region}:${o.peer ?? ''}:${o.why}`}>{o.why}</li>
            ))}
            {data.regions.skipped.map((s) => (
              <li key={s}>Left out: {s}</li>
            ))}
          </ul>
        </>
      ) : null}
      {data.suggestions.length ? (
        <>
          <h3>What to change</h3>
          <ul className="suggestions" data-testid="explain-suggestions">
            {data.suggestions.map((s) => (
              <li key={s}>{s}</li>
            ))}
          </ul>
        </>
      ) : null}
    </div>
  );
}

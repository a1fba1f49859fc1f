/** A job's attempts: node, state, GPUs, duration, exit, and what each paid per unit-hour (fixed at placement). */
import type { AttemptView } from '@gpux/protocol';
import { duration, money, shortId } from '../lib/format.js';
import { Link } from '../lib/router.js';
import { StateBadge } from './bits.js';

function Price({ a, perUnit }: { a: AttemptView; perUnit: string }) {
  if (!a.price) return <>—</>;
  const p = a.price;
  return (
    <span data-field="price" data-minor={p.pricePerUnitHour} title={`${p.marketClass}, ${p.units} unit(s), provider ${p.providerId}`}>
      {money(p.pricePerUnitHour, p.asset)}/{perUnit}
      <span className="cell-sub">
        {p.marketClass} · paid {money(p.charged, p.asset)}
      </span>
    </span>
  );
}

export function AttemptsTable({ attempts, linkNodes, perUnit, now }: { attempts: AttemptView[]; linkNodes: boolean; perUnit: string; now: number }) {
  if (attempts.length === 0) return <p className="muted">No attempt yet: the job has not been placed on a node.</p>;
  const priced = attempts.some((a) => a.price);
  return (
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
            {priced ? <th scope="col">Price</th> : null}
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
            <tr key={a.id} data-attempt-id={a.id}>
              <th scope="row" className="id hide-sm" title={a.id}>
                {shortId(a.id, 18)}
              </th>
              <td className="id">
                {linkNodes ? (
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
              {priced ? (
                <td>
                  <Price a={a} perUnit={perUnit} />
                </td>
              ) : null}
              <td className="hide-sm">{a.gpuIndices.length ? a.gpuIndices.join(', ') : '—'}</td>
              <td className="hide-sm">{a.startedAt ? duration((a.finishedAt ?? now) - a.startedAt) : '—'}</td>
              <td>{a.exitCode ?? '—'}</td>
              <td className="hide-sm">{a.error ?? '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

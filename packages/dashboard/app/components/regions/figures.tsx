/**
 * A region's summary as people read it (issue 15): free / total GPUs and the index price per market class, the
 * queue depth and the placement wait. Prices in USDC per GPU-hour, per job-hour for the cpu class.
 */
import type { RegionClassFigures, RegionSummary } from '@gpux/protocol';
import { amount, duration, num } from '../../lib/format.js';

/** A class and its figure stay on one line in a narrow table cell. */
export const ONE_LINE = { whiteSpace: 'nowrap' } as const;

/** The market class priced per job-hour (core's CPU_CLASS; the dashboard imports only types from the packages). */
const CPU_CLASS = 'cpu';

export const perHour = (cls: string): string => `USDC per ${cls === CPU_CLASS ? 'job' : 'GPU'}-hour`;

export const gpus = (c: RegionClassFigures): string => (c.class === CPU_CLASS && c.totalGpus === 0 ? '—' : `${num(c.freeGpus)} / ${num(c.totalGpus)}`);

/** The median wait from submission to first placement; "—" when no job was placed in the window. */
export const waitP50 = (s: RegionSummary): string => (s.placementWaitP50Ms === null ? '—' : duration(s.placementWaitP50Ms));

/** One line per class: "nvidia-h100-80gb 3 / 4 · 2.50" (free / total GPUs, index price), for a table cell. */
export function ClassLines({ summary }: { summary: RegionSummary }) {
  if (summary.classes.length === 0) return <span className="muted">no GPUs, no prices</span>;
  return (
    <>
      {summary.classes.map((c) => (
        <div key={c.class} data-class={c.class} style={ONE_LINE} title={`${c.class}: ${c.freeGpus} free of ${c.totalGpus} GPUs on live nodes; index price ${amount(c.priceIndex)} ${perHour(c.class)}`}>
          {c.class}{' '}
          <strong data-field="gpus" data-free={c.freeGpus} data-total={c.totalGpus}>
            {gpus(c)}
          </strong>
          {' · '}
          <span data-field="price" data-minor={c.priceIndex}>
            {amount(c.priceIndex)}
          </span>
        </div>
      ))}
    </>
  );
}

/** This region's classes as a table: class, free / total GPUs, index price with its unit. */
export function ClassTable({ summary }: { summary: RegionSummary }) {
  if (summary.classes.length === 0) return <p className="muted">No GPUs and no prices yet: nodes have not joined this region.</p>;
  return (
    <div className="table-wrap">
      <table className="data" data-testid="region-classes">
        <caption className="sr-only">Free and total GPUs and the index price per market class</caption>
        <thead>
          <tr>
            <th scope="col">Class</th>
            <th scope="col" className="num">
              Free / total GPUs
            </th>
            <th scope="col" className="num">
              Index price <span className="th-sub">USDC per GPU-hour</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {summary.classes.map((c) => (
            <tr key={c.class} data-class={c.class}>
              <th scope="row">{c.class}</th>
              <td className="num" data-field="gpus" data-free={c.freeGpus} data-total={c.totalGpus}>
                {gpus(c)}
              </td>
              <td className="num" data-field="price" data-minor={c.priceIndex} title={perHour(c.class)}>
                {amount(c.priceIndex)}
                {c.class === CPU_CLASS ? <span className="muted small"> per job-hour</span> : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

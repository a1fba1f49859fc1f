/** A line chart in hand-written SVG: time on x, one line per series, a legend, and a text summary for screen readers. */
import { timeOfDay } from '../lib/format.js';
import { useWidth } from '../lib/use-width.js';

export interface Series {
  name: string;
  points: Array<{ t: number; v: number }>;
}

const H = 220;
const M = { top: 12, right: 16, bottom: 28, left: 44 };

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

/** A tick label with enough decimals to tell the ticks apart (0.0025 on a 0.01 axis, 2.5 on a 10 axis). */
function tick(v: number, top: number): string {
  if (Number.isInteger(v)) return String(v);
  const decimals = Math.min(6, Math.max(1, 2 - Math.floor(Math.log10(top))));
  return v.toFixed(decimals).replace(/0+$/, '');
}

export function LineChart({ series, label, unit = '' }: { series: Series[]; label: string; unit?: string }) {
  const [box, W] = useWidth<HTMLElement>(640);
  const all = series.flatMap((s) => s.points);
  const times = new Set(all.map((p) => p.t));
  const summary = series.map((s) => `${s.name}: ${s.points.length ? `${s.points[s.points.length - 1]!.v}${unit} now` : 'no data'}`).join('; ');
  if (times.size < 2) {
    return (
      <figure className="chart" ref={box}>
        <p className="muted chart-wait" role="img" aria-label={`${label}: not enough readings yet`}>
          Collecting readings…
        </p>
      </figure>
    );
  }
  const t0 = Math.min(...all.map((p) => p.t));
  const t1 = Math.max(...all.map((p) => p.t));
  const top = niceMax(Math.max(...all.map((p) => p.v)));
  const x = (t: number) => M.left + ((t - t0) / (t1 - t0 || 1)) * (W - M.left - M.right);
  const y = (v: number) => H - M.bottom - (v / top) * (H - M.top - M.bottom);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => f * top);
  return (
    <figure className="chart" ref={box}>
      <svg viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-label={`${label}. ${summary}.`}>
        {ticks.map((v) => (
          <g key={v}>
            <line className="gridline" x1={M.left} x2={W - M.right} y1={y(v)} y2={y(v)} />
            <text className="axis" x={M.left - 6} y={y(v) + 4} textAnchor="end">
              {tick(v, top)}
            </text>
          </g>
        ))}
        <text className="axis" x={M.left} y={H - 8}>
          {timeOfDay(t0)}
        </text>
        <text className="axis" x={W - M.right} y={H - 8} textAnchor="end">
          {timeOfDay(t1)}
        </text>
        {series.map((s, i) => (
          <polyline key={s.name} className={`series s${i % 6}`} points={s.points.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(' ')} />
        ))}
      </svg>
      <figcaption className="legend">
        {series.map((s, i) => (
          <span key={s.name}>
            <i className={`swatch s${i % 6}`} aria-hidden="true" />
            {s.name}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}

/** Small building blocks: state badges, stat cards, the utilisation meter, definition lists. */
import type { ReactNode } from 'react';

/** Color marks the state, and the word always says it: color is never the only signal. */
export function StateBadge({ state }: { state: string }) {
  return <span className={`badge st-${state}`}>{state}</span>;
}

export function Stat({ label, value, sub, children }: { label: string; value: ReactNode; sub?: ReactNode; children?: ReactNode }) {
  return (
    <div className="stat">
      <div className="stat-label">{label}</div>
      <div className="stat-value">{value}</div>
      {sub ? <div className="stat-sub">{sub}</div> : null}
      {children}
    </div>
  );
}

/** A bar split into busy, free and unavailable parts; its accessible name carries the numbers. */
export function Meter({ busy, free, unavailable = 0, label }: { busy: number; free: number; unavailable?: number; label: string }) {
  const total = busy + free + unavailable;
  const w = (n: number) => `${total ? (n / total) * 100 : 0}%`;
  return (
    <div className="meter" role="img" aria-label={`${label}: ${busy} busy, ${free} free${unavailable ? `, ${unavailable} unavailable` : ''} of ${total}`}>
      <span className="m-busy" style={{ width: w(busy) }} />
      <span className="m-unavail" style={{ width: w(unavailable) }} />
    </div>
  );
}

export function Facts({ items, label }: { items: Array<[string, ReactNode]>; label: string }) {
  return (
    <dl className="facts" aria-label={label}>
      {items.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v === null || v === undefined || v === '' ? '—' : v}</dd>
        </div>
      ))}
    </dl>
  );
}

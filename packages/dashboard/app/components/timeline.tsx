/** A job's events in order, each with the details a reader needs. */
import type { EventView } from '@gpux/protocol';
import { dateTime, money, timeOfDay } from '../lib/format.js';

/** Keys of event data that add nothing a reader needs on the job page. */
const QUIET_KEYS = new Set(['idempotencyKey', 'buyerId', 'name', 'asset']);
/** Keys of the market's events whose values are amounts in minor units (job.charged, job.escrow_released). */
const MONEY_KEYS = new Set(['amount', 'charge', 'fee', 'provider']);

/** Event details worth a line: ids, outcomes and reasons; times as times. */
function detail(e: EventView): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(e.data)) {
    if (v === null || v === undefined || typeof v === 'object' || QUIET_KEYS.has(k)) continue;
    const asset = typeof e.data.asset === 'string' ? e.data.asset : 'usdc';
    const text = typeof v !== 'number' ? String(v) : k.endsWith('At') ? timeOfDay(v) : MONEY_KEYS.has(k) && e.type.startsWith('job.') ? money(v, asset) : String(v);
    parts.push(`${k}: ${text}`);
  }
  return parts.slice(0, 5).join(' · ');
}

export function Timeline({ events }: { events: EventView[] }) {
  if (events.length === 0) return <p className="muted">No events.</p>;
  return (
    <ol className="timeline" data-testid="timeline">
      {events.map((e) => (
        <li key={e.seq}>
          <time dateTime={new Date(e.at).toISOString()} title={dateTime(e.at)}>
            {timeOfDay(e.at)}
          </time>
          <span className="ev-type">{e.type}</span>
          <span className="ev-detail">{detail(e)}</span>
        </li>
      ))}
    </ol>
  );
}

/** The index price of one chosen class over its last epochs (GET /v1/market/history), as a line chart. */
import { useState } from 'react';
import type { PriceHistoryResponse } from '@gpux/protocol';
import { api, query } from '../../lib/api.js';
import { amount } from '../../lib/format.js';
import { usePoll } from '../../lib/use-poll.js';
import { LineChart } from '../line-chart.js';
import { ErrorNote } from '../page.js';

const POINTS = 120;
const MINOR_PER_UNIT = 1_000_000;

export function PriceHistory({ classes }: { classes: string[] }) {
  const [chosen, setChosen] = useState<string | undefined>(undefined);
  // A GPU class first: the cpu class sits at its floor on most networks.
  const cls = chosen && classes.includes(chosen) ? chosen : (classes.find((c) => c !== 'cpu') ?? classes[0]);
  const res = usePoll((signal) => (cls ? api<PriceHistoryResponse>(`/v1/market/history${query({ class: cls, limit: POINTS })}`, { signal }) : Promise.resolve({ points: [] })), [cls]);
  const points = res.data?.points ?? [];
  const last = points.at(-1);
  return (
    <div className="price-history">
      <div className="filters">
        <div className="field">
          <label htmlFor="history-class">Class</label>
          <select id="history-class" value={cls ?? ''} onChange={(e) => setChosen(e.target.value)} disabled={classes.length === 0}>
            {classes.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </div>
        {last ? (
          <p className="muted small history-now" data-testid="history-now">
            Epoch {last.epoch}: {amount(last.price)} USDC per {cls === 'cpu' ? 'job' : 'GPU'}-hour
          </p>
        ) : null}
      </div>
      {res.error ? <ErrorNote error={res.error} /> : null}
      {/* Dividing for the axis only: every amount shown as text stays exact. */}
      <LineChart series={[{ name: cls ?? 'price', points: points.map((p) => ({ t: p.at, v: p.price / MINOR_PER_UNIT })) }]} label={`Index price of ${cls ?? 'no class'} per epoch`} unit=" USDC" />
    </div>
  );
}

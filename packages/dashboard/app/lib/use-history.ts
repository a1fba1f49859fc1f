/** Readings collected while a page is open, for sparklines and live charts (the API keeps no history yet). */
import { useRef } from 'react';

export const HISTORY_LENGTH = 90;

export interface Reading {
  t: number;
  values: Record<string, number>;
}

/** Appends `values` once per new `at` (the poll's time), keeping the last HISTORY_LENGTH readings. */
export function useHistory(at: number | undefined, values: Record<string, number> | undefined): Reading[] {
  const ref = useRef<Reading[]>([]);
  const last = ref.current[ref.current.length - 1];
  if (at !== undefined && values && (!last || last.t !== at)) {
    ref.current = [...ref.current, { t: at, values }].slice(-HISTORY_LENGTH);
  }
  return ref.current;
}

export const seriesOf = (h: Reading[], key: string): number[] => h.map((r) => r.values[key] ?? 0);

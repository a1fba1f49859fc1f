/** Numbers, times and durations as people read them. */

const nf = new Intl.NumberFormat('en');

export const num = (n: number): string => nf.format(n);

export function percent(part: number, whole: number): string {
  if (whole <= 0) return '0%';
  return `${Math.round((part / whole) * 100)}%`;
}

export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** "12 s ago", "3 min ago"; `now` is a parameter so a render shows one consistent time. */
export function ago(at: number, now: number = Date.now()): string {
  const d = now - at;
  if (d < 1500) return 'just now';
  const s = Math.round(d / 1000);
  if (s < 60) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.round(h / 24)} d ago`;
}

export function dateTime(at: number | null | undefined): string {
  if (at === null || at === undefined) return '—';
  return new Date(at).toLocaleString('en-GB', { year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function timeOfDay(at: number): string {
  return new Date(at).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function mb(n: number): string {
  return n >= 1024 ? `${(n / 1024).toFixed(n % 1024 === 0 ? 0 : 1)} GB` : `${n} MB`;
}

/** A long id shortened for tables; the full id stays in the title and the link. */
export function shortId(id: string, keep = 14): string {
  return id.length <= keep + 1 ? id : `${id.slice(0, keep)}…`;
}

// ---- money: integer minor units (6 decimals for every asset), formatted with string arithmetic, never floats ----

const DECIMALS = 6;
const SYMBOL: Record<string, string> = { usdc: 'USDC', credit: 'CREDIT' };
const MINUS = '−';

/** 1500000 → "1.50", 562500 → "0.5625", −1 → "−0.000001": exact, at least 2 decimals, no trailing zeros past them. */
export function amount(minor: number): string {
  const digits = BigInt(Math.abs(minor)).toString().padStart(DECIMALS + 1, '0');
  const whole = nf.format(BigInt(digits.slice(0, -DECIMALS)));
  const frac = digits.slice(-DECIMALS).replace(/0+$/, '').padEnd(2, '0');
  return `${minor < 0 ? MINUS : ''}${whole}.${frac}`;
}

/** An amount with its asset: "12.50 USDC". */
export function money(minor: number, asset: string): string {
  return `${amount(minor)} ${SYMBOL[asset] ?? asset.toUpperCase()}`;
}

/** A signed amount that always shows its sign: "+1.00 USDC", "−0.25 USDC". */
export function signedMoney(minor: number, asset: string): string {
  return `${minor > 0 ? '+' : ''}${money(minor, asset)}`;
}

/** Basis points as a percentage with two decimals, exactly: 8000 → "80.00%", −125 → "−1.25%". */
export function bps(n: number): string {
  const a = Math.abs(Math.trunc(n));
  return `${n < 0 ? MINUS : ''}${nf.format(Math.floor(a / 100))}.${String(a % 100).padStart(2, '0')}%`;
}

/** A change in basis points with its sign always written: "+1.25%", "−0.50%", "0.00%". */
export function signedBps(n: number): string {
  return `${n > 0 ? '+' : ''}${bps(n)}`;
}

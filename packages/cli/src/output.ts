/** Output for people (a small column formatter, durations, times) and for scripts (--json). */

export interface Column<T> {
  header: string;
  value: (row: T) => string | number | null | undefined;
  align?: 'left' | 'right';
}

/**
 * Control characters (C0, DEL, C1) and the marks that reorder or break a terminal line (bidi overrides and
 * isolates, line/paragraph separators) as visible escapes: a node-chosen string (a file name, an error, a
 * hostname, a label, event data) must never move the cursor, recolour the terminal or hide text.
 */
export function escapeControl(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const n = c.charCodeAt(0);
    return n < 0x100 ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u${n.toString(16).padStart(4, '0')}`;
  });
}

/** One table or key-value cell: newlines folded to spaces, every other control character escaped. */
const cell = (v: string | number | null | undefined): string => (v === null || v === undefined || v === '' ? '-' : escapeControl(String(v).replace(/\s*\n\s*/g, ' ')));

/** Columns padded to their widest cell, two spaces apart, no trailing spaces. */
export function formatTable<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = rows.map((row) => columns.map((c) => cell(c.value(row))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (columns[i]!.align === 'right' ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return `${[line(columns.map((c) => c.header)), ...cells.map(line)].join('\n')}\n`;
}

/** `key: value` lines with the values aligned. */
export function formatKeyValues(pairs: ReadonlyArray<readonly [string, string | number | null | undefined]>): string {
  const width = Math.max(0, ...pairs.map(([k]) => k.length + 1));
  return `${pairs.map(([k, v]) => `${`${k}:`.padEnd(width)}  ${cell(v)}`).join('\n')}\n`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.round(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** "12s ago" relative to now, for listings. */
export function formatAge(at: number | null, now: number): string {
  return at === null ? '-' : `${formatDuration(Math.max(0, now - at))} ago`;
}

export function formatTime(at: number | null): string {
  return at === null ? '-' : new Date(at).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

export function toJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

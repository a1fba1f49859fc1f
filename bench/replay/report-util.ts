/** Shared by the placement and replay benchmarks: machine facts, percentiles, a plain-text table, flags. */
import { cpus, loadavg, totalmem } from 'node:os';

export function machine() {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? null,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: process.platform,
    /** 1-minute load average when the run started: another benchmark may share the machine. */
    loadavg1: Math.round((loadavg()[0] ?? 0) * 100) / 100,
  };
}

/** p in [0, 100] of an unsorted sample (nearest rank). */
export function percentile(values: ArrayLike<number>, p: number): number {
  const n = values.length;
  if (n === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(n - 1, Math.max(0, Math.ceil((p / 100) * n) - 1))] as number;
}

export function mean(values: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < values.length; i++) s += values[i] as number;
  return values.length ? s / values.length : Number.NaN;
}

export function table(header: string[], rows: Array<Array<string | number>>): string {
  const cells = rows.map((r) => r.map((c) => (typeof c === 'number' ? fmt(c) : c)));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  return [line(header), ...cells.map(line)].join('\n');
}

export function fmt(v: number): string {
  if (!Number.isFinite(v)) return '-';
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US');
  if (Math.abs(v) >= 1) return v.toFixed(2);
  return v.toPrecision(3);
}

/** --name value / --name=value / --flag flags; unknown flags are an error (with the list). */
export function parseFlags(argv: string[], known: Record<string, string>): Record<string, string | true> {
  const out: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const [name, inline] = a.slice(2).split('=', 2) as [string, string | undefined];
    if (!(name in known)) throw new Error(`unknown flag --${name}; flags:\n${Object.entries(known).map(([k, v]) => `  --${k}  ${v}`).join('\n')}`);
    const next = argv[i + 1];
    if (inline !== undefined) out[name] = inline;
    else if (next !== undefined && !next.startsWith('--')) {
      out[name] = next;
      i++;
    } else out[name] = true;
  }
  return out;
}

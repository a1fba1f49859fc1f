/** Output for people (a small column formatter, durations, times) and for scripts (-o json|yaml, --json). */
import { type Command, Option } from 'commander';
import { Document, visit } from 'yaml';
import { usageError } from './errors.js';

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

/**
 * The characters JSON.stringify and the YAML writer leave raw that a terminal still obeys (DEL, C1 controls such
 * as CSI 0x9b) or that reorder a line (bidi marks, line separators); C0 controls both already escape.
 */
const RAW_UNSAFE = /[\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const unicodeEscape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** Pretty JSON; a node-chosen string cannot drive the terminal (its unsafe characters escaped, the same data). */
export function toJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2).replace(RAW_UNSAFE, unicodeEscape)}\n`;
}

/** YAML of the same data as toJson, as safe for a terminal: strings with unsafe characters double-quoted, those escaped. */
export function toYaml(value: unknown): string {
  // No anchors/aliases (a script reads plain data) and no folding of long strings (lines stay greppable).
  const doc = new Document(value, { aliasDuplicateObjects: false });
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === 'string' && node.value.search(RAW_UNSAFE) !== -1) node.type = 'QUOTE_DOUBLE'; // only double-quoted YAML reads escapes
    },
  });
  return doc.toString({ lineWidth: 0 }).replace(RAW_UNSAFE, unicodeEscape);
}

// ---- -o / --output: one option and one renderer for every list and get command ----

export const OUTPUT_FORMATS = ['table', 'wide', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export interface OutputFlags {
  output?: OutputFormat;
  /** The older spelling of `-o json`, kept as its alias. */
  json?: boolean;
}

/**
 * Adds `-o, --output <format>` (table, wide, json, yaml) and `--json` (an alias of `-o json`) to a command.
 * Before the action runs the two are made to agree, so an action may read either; a bad format is a usage
 * error (exit 2) from commander listing the choices, and `--json -o yaml` is one too.
 */
export function outputOption(cmd: Command): Command {
  return cmd
    .addOption(new Option('-o, --output <format>', 'table (default), wide (more columns), json or yaml').choices(OUTPUT_FORMATS))
    .option('--json', 'print JSON for scripts (same as -o json)')
    .hook('preAction', (self) => {
      const flags = self.opts<OutputFlags>();
      if (flags.json && flags.output !== undefined && flags.output !== 'json') throw usageError(`--json and -o ${flags.output} disagree: pass one of them`);
      if (flags.json) self.setOptionValue('output', 'json');
      else if (flags.output === 'json') self.setOptionValue('json', true);
    });
}

/** The format the flags ask for: -o, else --json, else the table. */
export function outputFormat(flags: OutputFlags): OutputFormat {
  return flags.output ?? (flags.json ? 'json' : 'table');
}

/**
 * Writes `data` as JSON or YAML (the API's own shape: amounts in minor units), or else the text for people;
 * `text(wide)` gets whether -o wide asked for the extra columns (a command without any prints its table).
 */
export function render<T>(io: OutputIo, flags: OutputFlags, data: T, text: (wide: boolean) => string): void {
  if (!writeData(io, flags, data)) io.out.write(text(outputFormat(flags) === 'wide'));
}

/** For a command that prints its text in several steps: writes `data` and returns true when -o json or yaml asked for it. */
export function writeData(io: OutputIo, flags: OutputFlags, data: unknown): boolean {
  const format = outputFormat(flags);
  if (format === 'json') io.out.write(toJson(data));
  else if (format === 'yaml') io.out.write(toYaml(data));
  return format === 'json' || format === 'yaml';
}

/** `-o wide`: the table with its extra columns. */
export const isWide = (flags: OutputFlags): boolean => outputFormat(flags) === 'wide';

type OutputIo = { out: { write(s: string): unknown } };

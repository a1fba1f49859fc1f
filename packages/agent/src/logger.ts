/**
 * The default logger (pino on stderr) behind the core Logger port, and a silent one for tests and simulated fleets.
 * Two line formats: `json` (pino's own lines, for log collectors) and `text` (one readable line per entry: time,
 * level, message, key=value pairs) for a person at a terminal. `auto` picks text when stderr is a terminal.
 */
import type { Logger } from '@gpux/core';
import pino from 'pino';

/** pino's levels; the same names the coordinator accepts, so one GPUX_LOG_LEVEL serves both. */
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** --log-format / GPUX_LOG_FORMAT. */
export type LogFormat = 'auto' | 'text' | 'json';
export const LOG_FORMATS: readonly LogFormat[] = ['auto', 'text', 'json'];

/** Where log lines go: anything with write(string) (stderr by default). */
export interface LogSink {
  write(line: string): unknown;
  isTTY?: boolean;
}

export interface LoggerOptions {
  format?: LogFormat;
  /** Default: file descriptor 2 (stderr). */
  sink?: LogSink;
  /** Colour the level of text lines; default: the sink is a terminal and NO_COLOR is unset. */
  color?: boolean;
}

export function createLogger(level: LogLevel = 'info', bindings: Record<string, unknown> = {}, opts: LoggerOptions = {}): Logger {
  const sink = opts.sink ?? process.stderr;
  const text = opts.format === 'text' || (opts.format === 'auto' && sink.isTTY === true);
  const base = { level, base: { component: 'agent', ...bindings } };
  if (!text) return pino(base, opts.sink ? { write: (line: string) => void opts.sink?.write(line) } : pino.destination(2)) as unknown as Logger;
  const color = opts.color ?? (sink.isTTY === true && !process.env.NO_COLOR);
  // pino writes one JSON line per entry; each is re-read and printed as text (the agent logs a few lines a second).
  return pino(base, { write: (line: string) => void sink.write(formatLogLine(line, { color })) }) as unknown as Logger;
}

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const LEVEL_COLORS: Record<number, string> = { 10: '90', 20: '90', 30: '32', 40: '33', 50: '31', 60: '35' };
/** Said once at start or implied by the line itself: left out of text lines. */
const HIDDEN = new Set(['level', 'time', 'msg', 'component', 'pid', 'hostname']);

/**
 * One pino JSON line as `HH:MM:SS.mmm LEVEL message key=value …` (local time). Values that are not plain words
 * are JSON-quoted; an error shows its message; control characters never reach the terminal (log fields may
 * carry text a coordinator or a job chose). A line that is not JSON is passed through, escaped.
 */
export function formatLogLine(line: string, opts: { color?: boolean } = {}): string {
  let entry: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return `${escapeControls(line.trimEnd())}\n`;
    entry = parsed as Record<string, unknown>;
  } catch {
    return `${escapeControls(line.trimEnd())}\n`;
  }
  const levelNum = typeof entry.level === 'number' ? entry.level : 30;
  const name = (LEVEL_NAMES[levelNum] ?? String(entry.level)).padEnd(5);
  const level = opts.color ? `\u001b[${LEVEL_COLORS[levelNum] ?? '0'}m${name}\u001b[0m` : name;
  const time = typeof entry.time === 'number' ? clockTime(entry.time) : '--:--:--.---';
  const msg = typeof entry.msg === 'string' ? escapeControls(entry.msg) : '';
  const fields = Object.entries(entry)
    .filter(([k]) => !HIDDEN.has(k))
    .map(([k, v]) => `${escapeControls(k)}=${valueText(v)}`);
  return `${[time, level, msg, ...fields].filter((s) => s !== '').join(' ')}\n`;
}

function clockTime(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

/** A plain word prints bare; anything else JSON-quoted (JSON escapes every control character). */
function valueText(v: unknown): string {
  const message = v !== null && typeof v === 'object' && 'stack' in v ? (v as { message?: unknown }).message : undefined;
  if (typeof message === 'string') return escapeControls(JSON.stringify(message)); // pino's serialized error: its message is the useful part
  if (typeof v === 'string') return /^[\w.:/@+-]+$/.test(v) ? v : escapeControls(JSON.stringify(v));
  return escapeControls(JSON.stringify(v) ?? String(v));
}

/** C0, DEL and C1 controls (and the line/paragraph separators) as \uXXXX. */
function escapeControls(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};

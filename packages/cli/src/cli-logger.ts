/** A Logger for components the CLI runs in-process (`gpux dev`): quiet, human-readable, one line per warning. */
import type { Logger } from '@gpux/core';

/** Debug/info dropped (they would drown the CLI's own output); warnings and errors become one readable line each. */
export function warnLogger(write: (line: string) => void, prefix = 'warning'): Logger {
  const emit = (obj: object | string, msg?: string) => {
    if (typeof obj === 'string') return void write(`${prefix}: ${obj}\n`);
    const fields = Object.values(obj).map((v) => (v instanceof Error ? v.message : typeof v === 'string' ? v : JSON.stringify(v)));
    write(`${prefix}: ${[msg, ...fields].filter(Boolean).join(': ')}\n`);
  };
  return { debug() {}, info() {}, warn: emit, error: emit, child: () => warnLogger(write, prefix) };
}

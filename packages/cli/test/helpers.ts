/** Test helpers: a captured Io for running main() in-process, and temp dirs that clean themselves up. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { Io } from '../src/context.js';

export interface CapturedIo extends Io {
  stdout(): string;
  stderr(): string;
}

export function captureIo(env: Record<string, string | undefined> = {}): CapturedIo {
  let out = '';
  let err = '';
  return {
    out: { write: (s: string) => (out += s) },
    err: { write: (s: string) => (err += s) },
    env,
    exitCode: 0,
    stdout: () => out,
    stderr: () => err,
  };
}

export function tempDir(t: TestContext, prefix = 'gpux-cli-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** argv as main() expects it (node, script, ...args). */
export const argv = (...args: string[]) => ['node', 'gpux', ...args];

/** Throwaway directories for tests. */
import { mkdtempSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TempDir {
  path: string;
  /** Remove the directory and everything in it. Safe to call twice. */
  cleanup(): Promise<void>;
}

export function tempDir(prefix: string): TempDir {
  const path = mkdtempSync(join(tmpdir(), `${prefix.replace(/[^A-Za-z0-9._-]/g, '-')}-`));
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) };
}

/** Synchronous removal, for process 'exit' handlers. */
export function removeDirSync(path: string): void {
  rmSync(path, { recursive: true, force: true });
}

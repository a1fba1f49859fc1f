/** The dashboard build the browser tests load: built once with Vite when dist/ is missing. */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PACKAGE_DIR = fileURLToPath(new URL('../../', import.meta.url));
export const DIST_DIR = fileURLToPath(new URL('../../dist/', import.meta.url));

/** Build unless dist/index.html exists (npm ci's prepare script normally built it). Returns the build's ms, 0 if none. */
export function ensureBuilt(): number {
  if (existsSync(`${DIST_DIR}index.html`)) return 0;
  const vite = join(dirname(createRequire(import.meta.url).resolve('vite/package.json')), 'bin', 'vite.js');
  const t0 = Date.now();
  const res = spawnSync(process.execPath, [vite, 'build', '--logLevel', 'warn'], { cwd: PACKAGE_DIR, encoding: 'utf8', timeout: 120_000 });
  if (res.status !== 0) throw new Error(`vite build failed (${res.status ?? res.signal}): ${res.stderr || res.stdout}`);
  return Date.now() - t0;
}

/**
 * What a user's plain clone needs (issue 16): the trace data the benches read ships in the repository (no folder
 * beside it), and `npm ci` on the Node versions `engines` allows installs no dependency that refuses them.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { DEFAULT_NODE_FILE, DEFAULT_POD_FILE } from '../../../bench/replay/trace-csv.js';

const repoRoot = join(import.meta.dirname, '..', '..', '..');

function walk(dir: string, keep: (f: string) => boolean, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, keep, out);
    else if (keep(p)) out.push(p);
  }
  return out;
}

describe('the trace data ships in the repository', () => {
  const dataDir = join(repoRoot, 'bench', 'replay', 'data');

  test('bench:placement and bench:replay read their default files from bench/replay/data, tracked by git', () => {
    for (const file of [DEFAULT_NODE_FILE, DEFAULT_POD_FILE]) {
      assert.equal(relative(dataDir, file), file.split('/').pop(), `${file} is not in bench/replay/data`);
      const rel = relative(repoRoot, file);
      assert.doesNotThrow(() => execFileSync('git', ['ls-files', '--error-unmatch', rel], { cwd: repoRoot, stdio: 'pipe' }), `${rel} is not tracked by git`);
    }
  });

  test('each shipped file matches the sha256 its README gives (with the source and licence beside it)', () => {
    const readme = readFileSync(join(dataDir, 'README.md'), 'utf8');
    assert.match(readme, /Source:/);
    assert.match(readme, /License:/);
    const rows = [...readme.matchAll(/^\| `([^`]+)` \| [\d,]+ \| ([0-9a-f]{64}) \|$/gm)];
    assert.equal(rows.length, 2, readme);
    for (const [, name, sha] of rows) {
      const bytes = readFileSync(join(dataDir, name!));
      assert.equal(createHash('sha256').update(bytes).digest('hex'), sha, name);
    }
  });

  test('no bench, source or test file reads a folder beside the repository', () => {
    const outside = new RegExp(['\\.\\./', 'shared\\b|', 'shared/', 'traces'].join('')); // built so this file does not match itself
    const files = [join(repoRoot, 'bench'), ...readdirSync(join(repoRoot, 'packages')).flatMap((p) => ['src', 'test', 'app'].map((d) => join(repoRoot, 'packages', p, d)))]
      .filter((d) => existsSync(d))
      .flatMap((d) => walk(d, (f) => /\.(ts|tsx|mjs|js)$/.test(f)));
    const offenders = files.filter((f) => outside.test(readFileSync(f, 'utf8'))).map((f) => relative(repoRoot, f));
    assert.deepEqual(offenders, []);
  });
});

describe('engines agree with the dependencies', () => {
  // semver comes with the installed tree (fastify, node-abi); it is what npm uses to judge engines.
  const semver = createRequire(import.meta.url)('semver') as { satisfies(v: string, range: string): boolean; minVersion(range: string): { version: string } | null };
  const root = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { engines: { node: string } };

  test('the lowest Node of every range engines allows satisfies every installed package (npm ci warns EBADENGINE otherwise)', () => {
    // "^20.19.0 || >=22.12.0" → 20.19.0 and 22.12.0; 24 is checked too (the project runs on 20, 22 and 24).
    const lows = root.engines.node.split('||').map((r) => semver.minVersion(r.trim())?.version).filter((v): v is string => v !== undefined);
    assert.ok(lows.length > 0, root.engines.node);
    const versions = [...lows, '24.0.0'];
    for (const v of versions) assert.ok(semver.satisfies(v, root.engines.node), `Node ${v} is not allowed by engines ${root.engines.node}`);
    const manifests = walk(join(repoRoot, 'node_modules'), (f) => f.endsWith('/package.json') && !f.includes('/test/'));
    const refusing: string[] = [];
    for (const file of manifests) {
      let pkg: { name?: string; version?: string; engines?: { node?: unknown } };
      try {
        pkg = JSON.parse(readFileSync(file, 'utf8'));
      } catch {
        continue; // fixtures inside packages, not manifests
      }
      const range = pkg.engines?.node;
      if (typeof range !== 'string' || !pkg.name || !pkg.version) continue;
      for (const v of versions) if (!semver.satisfies(v, range)) refusing.push(`${pkg.name}@${pkg.version} needs node ${range}, engines allows ${v}`);
    }
    assert.ok(manifests.length > 100, 'node_modules is installed');
    assert.deepEqual(refusing, []);
  });
});

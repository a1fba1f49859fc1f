#!/usr/bin/env node
// Runs every packages/*/test/**/*.test.ts with Node's own test runner (through tsx).
// Extra arguments are substrings that select test files, e.g. `npm test -- store`.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const filters = process.argv.slice(2);
const files = readdirSync('packages')
  .flatMap((pkg) => {
    try {
      return walk(join('packages', pkg, 'test'));
    } catch {
      return [];
    }
  })
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(', ')}`);
  process.exit(2);
}
const res = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=300000', ...files], { stdio: 'inherit' });
process.exit(res.status ?? 1);

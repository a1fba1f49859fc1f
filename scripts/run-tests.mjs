#!/usr/bin/env node
// Runs every packages/*/test/**/*.test.ts with Node's own test runner (through tsx).
// Extra arguments are substrings that select test files, e.g. `npm test -- store`.
// Files start longest first (seconds from scripts/test-durations.json), so two runners finish together instead
// of one running a long file alone at the end. GPUX_TEST_DURATIONS_OUT=FILE records this run's seconds per file.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Seconds assumed for a file the durations list does not know yet (a new file): near the median. */
const UNKNOWN_FILE_SECONDS = 5;

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

/** The recorded seconds per file; none (alphabetical order) without the file. A file that does not parse is said. */
function knownSeconds() {
  let text;
  try {
    text = readFileSync('scripts/test-durations.json', 'utf8');
  } catch {
    return {};
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    console.error(`scripts/test-durations.json does not parse (${e.message}): test files run in name order; record it again with GPUX_TEST_DURATIONS_OUT`);
    return {};
  }
}

const filters = process.argv.slice(2);
const seconds = knownSeconds();
const secondsOf = (f) => seconds[f] ?? UNKNOWN_FILE_SECONDS;
const files = readdirSync('packages')
  .flatMap((pkg) => {
    try {
      return walk(join('packages', pkg, 'test'));
    } catch {
      return [];
    }
  })
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort((a, b) => secondsOf(b) - secondsOf(a) || a.localeCompare(b));
if (files.length === 0) {
  console.error(`no test files match ${filters.join(', ')}`);
  process.exit(2);
}
const record = process.env.GPUX_TEST_DURATIONS_OUT;
// Naming a reporter replaces the default one, so the default (spec on a terminal, tap otherwise) is named too.
const reporters = record
  ? ['--test-reporter', process.stdout.isTTY ? 'spec' : 'tap', '--test-reporter-destination', 'stdout', '--test-reporter', './scripts/durations-reporter.mjs', '--test-reporter-destination', record]
  : [];
const args = ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=300000', ...reporters, ...files];
const res = spawnSync(process.execPath, args, { stdio: 'inherit' });
process.exit(res.status ?? 1);

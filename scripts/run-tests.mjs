#!/usr/bin/env node
// Runs every packages/*/test/**/*.test.ts with Node's own test runner (through tsx).
// Extra arguments are substrings that select test files, e.g. `npm test -- store`.
// Files start longest first (seconds from scripts/test-durations.json), so two runners finish together instead
// of one running a long file alone at the end. GPUX_TEST_DURATIONS_OUT=FILE records this run's seconds per file.
// Short files share a process (a bundle): each process pays about 2.4 s to start and load the workspace through tsx,
// more than most files' tests take. GPUX_TEST_BUNDLE=0 runs every file in a process of its own.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Seconds assumed for a file the durations list does not know yet (a new file): near the median. */
const UNKNOWN_FILE_SECONDS = 5;
/** Files whose tests took less than this share a process; a bundle holds up to BUNDLE_SECONDS of them. */
const BUNDLE_BELOW_SECONDS = 5;
const BUNDLE_SECONDS = 20;

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
/**
 * A top-level hook (before, after, beforeEach, afterEach outside any describe) belongs to the process's root test:
 * in a bundle it would run around the other files' tests too, so such a file keeps a process of its own.
 */
const hasTopLevelHook = (file) => /^(before|after|beforeEach|afterEach)\(/m.test(readFileSync(file, 'utf8'));

/**
 * Short, known files grouped into bundles of up to BUNDLE_SECONDS; each bundle is an entry file (in a temp dir) that
 * imports its files in order, so their tests run one after the other in one process. Returns the files to pass to
 * node --test, longest first, and the temp dir to remove.
 */
function bundled(files) {
  const alone = [];
  const short = [];
  for (const f of files) {
    if (process.env.GPUX_TEST_BUNDLE !== '0' && seconds[f] !== undefined && seconds[f] < BUNDLE_BELOW_SECONDS && !hasTopLevelHook(f)) short.push(f);
    else alone.push(f);
  }
  if (short.length < 2) return { entries: files, dir: null };
  const groups = [];
  let group = null;
  for (const f of short) {
    if (!group || group.seconds + secondsOf(f) > BUNDLE_SECONDS) {
      group = { files: [], seconds: 0 };
      groups.push(group);
    }
    group.files.push(f);
    group.seconds += secondsOf(f);
  }
  const dir = mkdtempSync(join(tmpdir(), 'gpux-test-bundles-'));
  const entries = alone.map((f) => ({ path: f, seconds: secondsOf(f) }));
  groups.forEach((g, i) => {
    const path = join(dir, `bundle-${i + 1}.test.mjs`);
    const lines = g.files.map((f) => `import ${JSON.stringify(pathToFileURL(resolve(f)).href)};`);
    writeFileSync(path, `// ${g.files.length} short test files, one process (scripts/run-tests.mjs)\n${lines.join('\n')}\n`);
    entries.push({ path, seconds: g.seconds });
  });
  entries.sort((a, b) => b.seconds - a.seconds || a.path.localeCompare(b.path));
  return { entries: entries.map((e) => e.path), dir };
}

const record = process.env.GPUX_TEST_DURATIONS_OUT;
// Naming a reporter replaces the default one, so the default (spec on a terminal, tap otherwise) is named too.
const reporters = record
  ? ['--test-reporter', process.stdout.isTTY ? 'spec' : 'tap', '--test-reporter-destination', 'stdout', '--test-reporter', './scripts/durations-reporter.mjs', '--test-reporter-destination', record]
  : [];
const { entries, dir } = bundled(files);
const args = ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=300000', ...reporters, ...entries];
const res = spawnSync(process.execPath, args, { stdio: 'inherit' });
if (dir) rmSync(dir, { recursive: true, force: true });
process.exit(res.status ?? 1);

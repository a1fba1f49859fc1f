// A node:test reporter that writes each test file's seconds (its top-level tests' durations summed) as JSON,
// keyed by the path relative to the repository root: run-tests.mjs starts the longest files first with it.
import { relative } from 'node:path';

export default async function* durationsReporter(source) {
  const seconds = {};
  for await (const event of source) {
    if ((event.type !== 'test:pass' && event.type !== 'test:fail') || event.data.nesting !== 0 || !event.data.file) continue;
    const file = relative(process.cwd(), event.data.file);
    // A test declared in a shared module (the store conformance suite) names that module, not the file that ran it:
    // not counted, as ordering needs no more.
    if (!file.endsWith('.test.ts')) continue;
    seconds[file] = (seconds[file] ?? 0) + event.data.details.duration_ms / 1000;
  }
  const sorted = Object.entries(seconds).sort(([a], [b]) => a.localeCompare(b)).map(([f, s]) => [f, Math.round(s * 10) / 10]);
  yield `${JSON.stringify(Object.fromEntries(sorted), null, 2)}\n`;
}

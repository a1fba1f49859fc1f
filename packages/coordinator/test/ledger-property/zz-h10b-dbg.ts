import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runSequence } from './runner.js';
import { sqliteRuns } from './stores.js';
import { LYING_REFEREE_RUN, VERIFY_FUNDING, VERIFY_RUN } from './verify-run.js';
test('dbg', async () => {
  const open = sqliteRuns(mkdtempSync(join(tmpdir(), 'h10b-')));
  const which = process.env.WHICH === 'lie' ? LYING_REFEREE_RUN : VERIFY_RUN;
  const h = await open();
  const stats = new Map();
  try {
    const run = await runSequence(h.stores[0] as any, VERIFY_FUNDING, which, stats, { lyingDisputeReferees: process.env.WHICH === 'lie' });
    console.log(run.log.join('\n'));
  } catch (e) { console.log(String(e instanceof Error ? e.message : e)); }
  finally { await h.done(); }
  console.log([...stats].map(([k, v]) => `${k}: ${v}`).join(', '));
});

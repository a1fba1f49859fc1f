/**
 * One run of a property: the setup, then the commands one at a time (or, after a sequential prefix, in
 * concurrent batches), the invariants after each step and at the end, the log a failure reports, and the
 * coverage counters.
 */
import type { Store } from '@gpux/core';
import type { Batch } from './batches.js';
import { checkEnd, checkStep } from './checks.js';
import type { Cmd } from './commands.js';
import { execute } from './execute.js';
import { Run, setup } from './model.js';

/** For the coverage counters: nothing to act on, a refusal (ends in its code), stake short, or done. */
const classify = (out: string) => (out === 'skip' ? 'skip' : /\b[A-Z_]{6,}$/.test(out) ? 'refused' : /stake short/.test(out) ? 'stake short' : 'ok');

/** Rethrow with the run's log, so a failure shows what the store did, not only the commands. */
async function withLog(run: Run, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new Error(`${message}\n--- what the run did (latest last) ---\n${run.tail()}`, { cause: err });
  }
}

/** One command at a time, each checked. */
async function runCommands(run: Run, store: Store, cmds: readonly Cmd[], tag: string): Promise<void> {
  for (const [i, cmd] of cmds.entries()) {
    const out = await execute(run, store, cmd);
    run.log.push(`${tag}#${i} ${JSON.stringify(cmd)} → ${out}`);
    run.count(`${tag}${cmd.t} ${classify(out)}`);
    run.lastCommand = cmd.t;
    await checkStep(run, store);
    run.lastCommand = undefined;
  }
}

/** Interpret `cmds` one at a time, checking after each; the run's model for the caller's own checks. */
export async function runSequence(
  store: Store,
  funding: readonly number[],
  cmds: readonly Cmd[],
  stats: Map<string, number>,
): Promise<Run> {
  const run = new Run(true, stats);
  await withLog(run, async () => {
    await setup(run, store, funding);
    await checkStep(run, store);
    await runCommands(run, store, cmds, '');
    await checkEnd(run, store);
  });
  return run;
}

/**
 * A sequential prefix (jobs running, stake bonded, payouts pending: something to race on), then each
 * batch's commands at once (alternating pools), checking after each batch.
 */
export async function runBatches(
  stores: readonly Store[],
  funding: readonly number[],
  prefix: readonly Cmd[],
  batches: readonly Batch[],
  stats: Map<string, number>,
): Promise<void> {
  const run = new Run(true, stats);
  const first = stores[0] as Store;
  await withLog(run, async () => {
    await setup(run, first, funding);
    await checkStep(run, first);
    await runCommands(run, first, prefix, 'prefix ');
    run.sequential = false;
    for (const [i, batch] of batches.entries()) {
      run.now += batch.advanceMs;
      const settled = await Promise.allSettled(batch.cmds.map((cmd, j) => execute(run, stores[j % stores.length] as Store, cmd)));
      for (const [j, s] of settled.entries()) {
        const cmd = batch.cmds[j] as Cmd;
        run.log.push(`#${i}.${j} ${JSON.stringify(cmd)} → ${s.status === 'fulfilled' ? s.value : `THREW ${String(s.reason)}`}`);
        if (s.status === 'fulfilled') run.count(`${cmd.t} ${classify(s.value)}`);
      }
      const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) throw failed.reason;
      await checkStep(run, first);
    }
    await checkEnd(run, first);
  });
}

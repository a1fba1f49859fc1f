/** Carries out one command of any kind against a Store: the job verbs, the money verbs, or the clock. */
import type { Store } from '@gpux/core';
import type { Cmd, Verbs } from './commands.js';
import { jobVerbs } from './job-verbs.js';
import type { Run } from './model.js';
import { moneyVerbs } from './money-verbs.js';
import { T0 } from './world.js';

const verbs: Verbs<Cmd['t']> = {
  ...jobVerbs,
  ...moneyVerbs,
  async advance(run, _store, cmd) {
    run.now += cmd.ms;
    return `now T0+${run.now - T0}`;
  },
};

/** Run one command against the store, updating the model on success. Returns what happened, for the log. */
export function execute(run: Run, store: Store, cmd: Cmd): Promise<string> {
  const verb = verbs[cmd.t] as (run: Run, store: Store, cmd: Cmd) => Promise<string>;
  return verb(run, store, cmd);
}

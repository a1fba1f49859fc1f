/**
 * Verdicts of a buyer-supplied checker (spec.verify, issue 11): a job that cannot be bit-exact gives a
 * checker that receives two runs' output sets (the executor's side under a/, the other under b/) and exits 0
 * when they agree. This is the checker-based counterpart of verification.ts's digest verdicts: the store
 * gives the checker runs' outcomes as facts, these functions decide. Pure.
 */
import { MAX_INPUT_BYTES, MAX_INPUT_FILES } from '@gpux/protocol';
import { type RunResult, resultKey, type StepCheck } from './verification-step.js';

/** The executor's side of a pair (a check run's side is its job id). */
export const EXECUTOR = 'executor';
/** Checker runs one pair may take when they end without a verdict (each with its own job retries). */
export const MAX_CHECKER_RUNS_PER_PAIR = 2;
/** Where each side's files go in the checker's inputs. */
export const CHECKER_SIDES = ['a/', 'b/'] as const;
/** Longest input path (protocol RelativePath). */
const MAX_PATH_CHARS = 255;

/** What a run's stored outputs are, as the checker's inline inputs would be (null: some file stored without content). */
export interface OutputSetFacts {
  files: number;
  /** Characters of content as inline inputs count them (base64 text). */
  chars: number;
  longestPath: number;
}

export const NO_OUTPUTS: OutputSetFacts = { files: 0, chars: 0, longestPath: 0 };

/** Whether both sets fit one checker run's inline inputs (the spec's bounds, with the a/ and b/ prefixes). */
export function checkerCanCompare(a: OutputSetFacts | null | undefined, b: OutputSetFacts | null | undefined): boolean {
  if (!a || !b) return false;
  const prefix = CHECKER_SIDES[0].length;
  return a.files + b.files <= MAX_INPUT_FILES && a.chars + b.chars <= MAX_INPUT_BYTES && Math.max(a.longestPath, b.longestPath) + prefix <= MAX_PATH_CHARS;
}

/**
 * Two runs compared:
 *  agree        identical results (no checker needed), or the last checker run exited 0
 *  disagree     different exit codes (the program itself behaved differently), or the checker exited non-zero
 *  pending      a checker run is queued or running
 *  unqueued     a checker run is needed now (none yet, or the earlier ones ended without a verdict)
 *  failed       MAX_CHECKER_RUNS_PER_PAIR checker runs ended without a verdict
 *  uncheckable  the outputs cannot be handed to the checker (not stored inline, or too large together)
 */
export type PairVerdict = 'agree' | 'disagree' | 'pending' | 'unqueued' | 'failed' | 'uncheckable';

export interface Side {
  id: string;
  result: RunResult;
  outputs: OutputSetFacts | null | undefined;
}

const samePair = (p: readonly [string, string] | undefined, x: string, y: string): boolean => !!p && ((p[0] === x && p[1] === y) || (p[0] === y && p[1] === x));

export function pairVerdict(x: Side, y: Side, checks: readonly StepCheck[]): PairVerdict {
  if (resultKey(x.result) === resultKey(y.result)) return 'agree';
  if (x.result.exitCode !== y.result.exitCode) return 'disagree';
  const runs = checks.filter((c) => c.kind === 'checker' && samePair(c.pair, x.id, y.id));
  if (runs.some((c) => c.outcome.status === 'running')) return 'pending';
  const last = runs[runs.length - 1];
  if (last?.outcome.status === 'result') return last.outcome.result.exitCode === 0 ? 'agree' : 'disagree';
  if (runs.length >= MAX_CHECKER_RUNS_PER_PAIR) return 'failed';
  return checkerCanCompare(x.outputs, y.outputs) ? 'unqueued' : 'uncheckable';
}

/** agree → true, disagree → false, anything else unknown (null). */
export const known = (v: PairVerdict): boolean | null => (v === 'agree' ? true : v === 'disagree' ? false : null);

export type CheckerMismatchVerdict = { kind: 'referee-needed' } | { kind: 'decided'; winner: 'executor' | 'auditor' };

/**
 * An audit mismatch judged by the buyer's checker (the executor's and the auditor's outputs disagree): each
 * referee's outputs are checked against both sides. A referee votes for a side when the checker says it
 * agrees with that side and disagrees with the other; agreeing with both or neither (the checker is no
 * equivalence), or an unknown comparison, is no vote. The first side `quorum` referees vote for wins.
 */
export function checkerMismatchVerdict(votes: ReadonlyArray<{ executor: boolean | null; auditor: boolean | null }>, quorum = 2): CheckerMismatchVerdict {
  let executor = 0;
  let auditor = 0;
  for (const v of votes) {
    if (v.executor === true && v.auditor === false) executor++;
    else if (v.auditor === true && v.executor === false) auditor++;
    if (executor >= quorum) return { kind: 'decided', winner: 'executor' };
    if (auditor >= quorum) return { kind: 'decided', winner: 'auditor' };
  }
  return { kind: 'referee-needed' };
}

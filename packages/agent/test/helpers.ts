/** Test helpers: fixture loading, a scripted CommandRunner, temp dirs. */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CommandResult, CommandRunner } from '../src/index.js';

export const fixture = (path: string): string => readFileSync(new URL(`./fixtures/${path}`, import.meta.url), 'utf8');

export const ok = (stdout: string): CommandResult => ({ code: 0, stdout, stderr: '' });
export const notFound: CommandResult = { code: null, stdout: '', stderr: '', failure: 'not-found' };

/** Answers by command name (and a predicate on args); records every call. */
export function scriptedRunner(script: Record<string, CommandResult | ((args: string[]) => CommandResult)>): CommandRunner & { calls: string[][] } {
  const calls: string[][] = [];
  const run = async (cmd: string, args: string[]) => {
    calls.push([cmd, ...args]);
    const answer = script[cmd];
    if (answer === undefined) return notFound;
    return typeof answer === 'function' ? answer(args) : answer;
  };
  return Object.assign(run, { calls });
}

export async function tempDir(t: { after(fn: () => unknown): void }, prefix = 'gpux-agent-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

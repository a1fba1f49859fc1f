/** Runs a hardware tool (nvidia-smi, amd-smi, rocm-smi) with a timeout; never throws. Injectable so tests feed recorded outputs. */
import { execFile } from 'node:child_process';

export interface CommandResult {
  /** Exit code; null when the command could not be started or was killed. */
  code: number | null;
  stdout: string;
  stderr: string;
  /** Set when the command did not run to an exit: "not-found", "timeout", or the spawn error message. */
  failure?: 'not-found' | 'timeout' | string;
}

export type CommandRunner = (command: string, args: string[]) => Promise<CommandResult>;

export const TOOL_TIMEOUT_MS = 10_000;

export function execFileRunner(timeoutMs = TOOL_TIMEOUT_MS): CommandRunner {
  return (command, args) =>
    new Promise((resolve) => {
      execFile(command, args, { timeout: timeoutMs, maxBuffer: 8 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
        if (!err) return resolve({ code: 0, stdout, stderr });
        const e = err as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null; code?: unknown };
        if (e.code === 'ENOENT') return resolve({ code: null, stdout: '', stderr: '', failure: 'not-found' });
        if (e.killed && e.signal) return resolve({ code: null, stdout, stderr, failure: 'timeout' });
        if (typeof e.code === 'number') return resolve({ code: e.code, stdout, stderr });
        resolve({ code: null, stdout, stderr, failure: e.message });
      });
    });
}

/** One line saying why a tool gave no answer, for the `problems` list. */
export function describeFailure(tool: string, r: CommandResult): string {
  if (r.failure === 'not-found') return `${tool} not found`;
  if (r.failure === 'timeout') return `${tool} timed out after ${TOOL_TIMEOUT_MS / 1000} s`;
  if (r.failure) return `${tool} could not run: ${r.failure}`;
  const msg = firstLine(r.stderr) || firstLine(r.stdout);
  return `${tool} exited with code ${r.code}${msg ? `: ${msg}` : ''}`;
}

function firstLine(s: string): string {
  return (
    s
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l.length > 0) ?? ''
  );
}

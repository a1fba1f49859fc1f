/** Signals to a whole process group (the job and everything it started), ignoring groups that are already gone. */
export function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
  }
}

/** SIGTERM now, SIGKILL after `graceMs` unless `cancel()` is called first (the group exited). */
export function terminateGroup(pid: number | undefined, graceMs: number): { cancel(): void } {
  killGroup(pid, 'SIGTERM');
  const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), graceMs);
  return { cancel: () => clearTimeout(timer) };
}

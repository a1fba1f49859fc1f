/**
 * CPU time spent by a process, so a phase can report CPU ms per job: a figure that holds up better than
 * wall-clock throughput when other work shares the machine.
 */
import { readFileSync } from 'node:fs';

/** Linux's USER_HZ; /proc/<pid>/stat counts utime and stime in these ticks. */
const TICKS_PER_SECOND = 100;

/** User + system CPU ms of another process (Linux /proc), or null where that cannot be read. */
export function processCpuMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15 of the whole line.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/**
 * User + system CPU ms of a process and of its children it has reaped (fields 16 and 17): for a server that forks a
 * process per connection (PostgreSQL's postmaster), the time of backends that already exited.
 */
export function processTreeCpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** The parent pid of a process, or null when it is gone. */
export function parentPid(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

/** User + system CPU ms of this process. */
export function ownCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

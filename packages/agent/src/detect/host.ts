/** The host's CPU, memory, OS and name, as the advertisement reports them. */
import os from 'node:os';

export interface HostInfo {
  hostname: string;
  os: string;
  arch: string;
  cpuCores: number;
  memoryMb: number;
}

export function detectHost(): HostInfo {
  return {
    hostname: os.hostname() || 'localhost',
    os: `${os.platform()} ${os.release()}`,
    arch: os.arch(),
    cpuCores: Math.max(1, os.availableParallelism()),
    memoryMb: Math.floor(os.totalmem() / (1024 * 1024)),
  };
}

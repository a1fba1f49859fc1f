/** AgentConfig and loadAgentConfig: every option of the node agent, parsed once at start from env and CLI flags (pure). */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { GpuxError } from '@gpux/core';
import type { Problem } from '@gpux/protocol';
import { LOG_LEVELS, type LogLevel } from './logger.js';

export type ExecutorKind = 'process' | 'simulated';

export interface AgentConfig {
  /** GPUX_COORDINATOR_URL / --coordinator. Required: http(s) URL of the coordinator. */
  coordinatorUrl: string;
  /** GPUX_NODE_DIR / --data-dir. Default `$GPUX_HOME/node` ($GPUX_HOME defaults to ~/.gpux). Holds the key and work dirs. */
  dataDir: string;
  /** GPUX_NODE_EXECUTOR / --executor. 'process' (default) or 'simulated'; 'docker' is reserved. */
  executor: ExecutorKind;
  /** GPUX_ALLOW_UNSAFE_PROCESS / --allow-unsafe-process. Default false; the process executor refuses to start without it. */
  allowUnsafeProcess: boolean;
  /** GPUX_NODE_REGION / --region. Optional region advertised to the scheduler. */
  region?: string;
  /** GPUX_NODE_LABELS / --labels, as "k=v,k2=v2". Default {}. */
  labels: Record<string, string>;
  /** GPUX_NODE_NAME / --name. Overrides the advertised hostname. */
  name?: string;
  /** GPUX_LOG_LEVEL / --log-level: fatal, error, warn, info, debug, trace or silent. Default 'info'. */
  logLevel: LogLevel;
  /** GPUX_SIM_GPUS / --simulated-gpus. GPUs a simulated node pretends to have. Default 1. */
  simulatedGpus: number;
  /** How long one work long-poll waits on the coordinator. Default 25000 ms. */
  pollWaitMs: number;
  /** How long stop({ graceful: true }) waits for running attempts. Default 60000 ms. */
  gracefulTimeoutMs: number;
}

export interface AgentConfigOverrides {
  coordinatorUrl?: string;
  dataDir?: string;
  executor?: string;
  allowUnsafeProcess?: boolean | string;
  region?: string;
  labels?: string | Record<string, string>;
  name?: string;
  logLevel?: string;
  simulatedGpus?: number | string;
  pollWaitMs?: number | string;
  gracefulTimeoutMs?: number | string;
}

export function loadAgentConfig(env: Record<string, string | undefined>, overrides: AgentConfigOverrides = {}): AgentConfig {
  const problems: Problem[] = [];
  const bad = (path: string, message: string) => problems.push({ path, message });
  const pick = <T>(override: T | undefined, name: string): T | string | undefined => override ?? nonEmpty(env[name]);

  const url = pick(overrides.coordinatorUrl, 'GPUX_COORDINATOR_URL');
  let coordinatorUrl = '';
  if (!url) bad('coordinatorUrl', 'the coordinator URL is required (--coordinator or GPUX_COORDINATOR_URL), e.g. http://127.0.0.1:8080');
  else {
    try {
      const u = new URL(url);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http');
      coordinatorUrl = u.toString().replace(/\/+$/, '');
    } catch {
      bad('coordinatorUrl', `"${url}" is not a valid http(s) URL`);
    }
  }

  const home = nonEmpty(env.GPUX_HOME) ?? join(nonEmpty(env.HOME) ?? homedir(), '.gpux');
  const dataDir = pick(overrides.dataDir, 'GPUX_NODE_DIR') ?? join(home, 'node');

  const executorName = pick(overrides.executor, 'GPUX_NODE_EXECUTOR') ?? 'process';
  let executor: ExecutorKind = 'process';
  if (executorName === 'docker') bad('executor', 'the docker executor is not available yet; use --executor process (with --allow-unsafe-process) or simulated');
  else if (executorName === 'process' || executorName === 'simulated') executor = executorName;
  else bad('executor', `unknown executor "${executorName}" (expected process or simulated)`);

  const allowUnsafeProcess = toBool(pick(overrides.allowUnsafeProcess, 'GPUX_ALLOW_UNSAFE_PROCESS'), 'allowUnsafeProcess', bad) ?? false;

  const labelsRaw = pick(overrides.labels, 'GPUX_NODE_LABELS');
  const labels = typeof labelsRaw === 'object' ? { ...labelsRaw } : parseLabels(labelsRaw ?? '', bad);

  const logLevelRaw = pick(overrides.logLevel, 'GPUX_LOG_LEVEL') ?? 'info';
  const logLevel = LOG_LEVELS.find((l) => l === logLevelRaw);
  if (!logLevel) bad('logLevel', `unknown log level "${logLevelRaw}" (expected ${LOG_LEVELS.join(', ')})`);

  const simulatedGpus = toInt(pick(overrides.simulatedGpus, 'GPUX_SIM_GPUS'), 'simulatedGpus', 0, 64, bad) ?? 1;
  const pollWaitMs = toInt(pick(overrides.pollWaitMs, 'GPUX_NODE_POLL_WAIT_MS'), 'pollWaitMs', 0, 60_000, bad) ?? 25_000;
  const gracefulTimeoutMs = toInt(pick(overrides.gracefulTimeoutMs, 'GPUX_NODE_GRACEFUL_TIMEOUT_MS'), 'gracefulTimeoutMs', 0, 24 * 3600_000, bad) ?? 60_000;

  const region = pick(overrides.region, 'GPUX_NODE_REGION');
  if (region !== undefined && (region.length > 64 || region.length === 0)) bad('region', 'must be 1-64 characters');
  const name = pick(overrides.name, 'GPUX_NODE_NAME');
  if (name !== undefined && name.length > 255) bad('name', 'must be at most 255 characters');

  if (problems.length > 0) {
    throw new GpuxError('REQUEST_INVALID', `invalid node agent configuration: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`, { problems });
  }
  const config: AgentConfig = {
    coordinatorUrl,
    dataDir,
    executor,
    allowUnsafeProcess,
    labels,
    logLevel: logLevel ?? 'info',
    simulatedGpus,
    pollWaitMs,
    gracefulTimeoutMs,
  };
  if (region !== undefined) config.region = region;
  if (name !== undefined) config.name = name;
  return config;
}

/** "k=v,k2=v2" → { k: 'v', k2: 'v2' }. */
export function parseLabels(text: string, bad: (path: string, message: string) => void = throwing): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const eq = part.indexOf('=');
    const key = eq < 0 ? part : part.slice(0, eq).trim();
    if (eq < 0 || !/^[a-zA-Z0-9][a-zA-Z0-9._/-]{0,62}$/.test(key)) {
      bad('labels', `"${part}" is not a key=value label (keys: 1-63 letters, digits, ".", "_", "/", "-")`);
      continue;
    }
    labels[key] = part.slice(eq + 1).trim();
  }
  return labels;
}

function throwing(path: string, message: string): never {
  throw new GpuxError('REQUEST_INVALID', `${path}: ${message}`, { problems: [{ path, message }] });
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function toBool(v: boolean | string | undefined, path: string, bad: (p: string, m: string) => void): boolean | undefined {
  if (v === undefined || typeof v === 'boolean') return v;
  if (/^(1|true|yes|on)$/i.test(v)) return true;
  if (/^(0|false|no|off)$/i.test(v)) return false;
  bad(path, `"${v}" is not a boolean (use true or false)`);
  return undefined;
}

function toInt(v: number | string | undefined, path: string, min: number, max: number, bad: (p: string, m: string) => void): number | undefined {
  if (v === undefined) return undefined;
  const n = typeof v === 'number' ? v : /^-?\d+$/.test(v.trim()) ? Number(v) : Number.NaN;
  if (!Number.isInteger(n) || n < min || n > max) {
    bad(path, `"${v}" must be an integer from ${min} to ${max}`);
    return undefined;
  }
  return n;
}

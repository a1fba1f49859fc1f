/** AgentConfig and loadAgentConfig: every option of the node agent, parsed once at start from env and CLI flags (pure). */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { GpuxError } from '@gpux/core';
import { assertSafeTransport, Fingerprint, InsecureTransportError, type Problem } from '@gpux/protocol';
import { normalizePin } from '@gpux/protocol/tls-fetch';
import { CHALLENGE_RUNNER_SETTINGS, type ChallengeRunnerSetting } from './challenge/choose.js';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from './logger.js';

export type ExecutorKind = 'docker' | 'process' | 'simulated';

export interface AgentConfig {
  /** --coordinator, else GPUX_COORDINATOR_URL, else GPUX_URL. Required: http(s) URL of the coordinator (the first, when several are given). */
  coordinatorUrl: string;
  /**
   * Set when --coordinator / GPUX_COORDINATOR_URL names several URLs, comma-separated (replicas of one coordinator,
   * sharing its key): all of them in order, the first being coordinatorUrl. The agent moves on to the next after a
   * connection failure or a 502/503/504 and stays on the one that answers. Use coordinatorUrlsOf(config) to read it.
   */
  coordinatorUrls?: string[];
  /**
   * GPUX_ENROLLMENT_TOKEN / --enrollment-token. Required by the coordinator: a node enrollment token
   * (`gpux_enroll_…`, from `gpux enrollment create`) of the account that owns this node, is paid for its
   * jobs and bonds its stake. It can only register nodes, so a leaked node config cannot spend money.
   */
  enrollmentToken?: string;
  /**
   * GPUX_INSECURE=1 / --insecure. Default false: registering over plain HTTP to a non-loopback coordinator is
   * refused, because the enrollment token would cross the network in clear (anyone on the path could reuse it).
   */
  insecure?: boolean;
  /**
   * GPUX_COORDINATOR_KEY / --coordinator-key: fingerprint (64 hex, sha256 of the raw public key) of the coordinator
   * key to pin (issue 19). Default: the one inside the enrollment token, else the key of the first registration
   * answer (trust on first use, warned). Once pinned (<dataDir>/coordinator-keys.json), a different value refuses to start.
   */
  coordinatorKey?: string;
  /** GPUX_CA_FILE / --ca-file: PEM bundle of the CAs to trust for an https coordinator, instead of the system's roots. */
  caFile?: string;
  /**
   * GPUX_COORDINATOR_CERT_SHA256 / --coordinator-cert-sha256 FP[,FP]: certificate pinning, on top of normal TLS
   * verification: one certificate of the coordinator's chain (its own, or an issuing CA's) must have one of these sha256 fingerprints.
   */
  coordinatorCertSha256?: string[];
  /** GPUX_NODE_DIR / --data-dir. Default `$GPUX_HOME/node` ($GPUX_HOME defaults to ~/.gpux). Holds the key and work dirs. */
  dataDir: string;
  /** GPUX_NODE_EXECUTOR / --executor. 'docker' (default: jobs run isolated in containers), 'process' (host processes, trusted jobs only) or 'simulated'. */
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
  /** GPUX_LOG_FORMAT / --log-format: text (readable lines), json (pino lines), auto (text on a terminal, else json). Default 'auto'. */
  logFormat: LogFormat;
  /** GPUX_SIM_GPUS / --simulated-gpus. GPUs a simulated node pretends to have. Default 1. */
  simulatedGpus: number;
  /** GPUX_NODE_ALLOW_NETWORK / --allow-network. Default false: containers get no network; true lets jobs that ask for it (spec `network: true`) have one. */
  allowNetwork: boolean;
  /** GPUX_NODE_IMAGE_ALLOW, comma-separated patterns ("docker.io/library/*", "ghcr.io/org/*", exact refs). Default []: every image not denied. */
  imageAllow: string[];
  /** GPUX_NODE_IMAGE_DENY, same patterns; a denied image never runs, even if allowed. Default []. */
  imageDeny: string[];
  /** GPUX_NODE_PIDS_LIMIT: most processes and threads one container may have. Default 4096. */
  pidsLimit: number;
  /** GPUX_NODE_MAX_OUTPUT_BYTES: total output size of one attempt; beyond it the attempt fails. Default 1 GiB. */
  maxOutputBytes: number;
  /** GPUX_NODE_MAX_LOG_BYTES: log bytes shipped per attempt; the rest is dropped with a "[logs truncated]" line. Default 10 MiB. */
  maxLogBytes: number;
  /** GPUX_NODE_MAX_SCRATCH_BYTES: quota of a job's scratch dir (/gpux/scratch, on the node's disk); past it the job is killed and fails. Default 10 GiB. */
  maxScratchBytes: number;
  /** GPUX_NODE_DEFAULT_CPUS: CPU limit of a container whose spec sets no cpuCores (never more than the host has). Default 2. */
  defaultCpus: number;
  /** GPUX_NODE_DEFAULT_MEMORY_GB: memory limit, GiB, of a container whose spec sets no memoryGb (never more than the host has). Default 4. */
  defaultMemoryGb: number;
  /** DOCKER_HOST (unix:// only) or GPUX_DOCKER_SOCKET. Default /var/run/docker.sock. */
  dockerSocket: string;
  /** How long one work long-poll waits on the coordinator. Default 25000 ms. */
  pollWaitMs: number;
  /** How long stop({ graceful: true }) waits for running attempts. Default 60000 ms. */
  gracefulTimeoutMs: number;
  /**
   * GPUX_CHALLENGE_RUNNER / --challenge-runner: what computes the proof-of-hardware challenge. 'auto' (default):
   * nvidia-torch when NVIDIA GPUs and PyTorch (host python3, else the NVIDIA container runtime) are found, else cpu.
   */
  challengeRunner: ChallengeRunnerSetting;
  /** GPUX_CHALLENGE_PYTHON: the host python with PyTorch. Default python3. */
  challengePython?: string;
  /** GPUX_CHALLENGE_IMAGE: the PyTorch image the container runner uses. Default a public pytorch/pytorch CUDA runtime image. */
  challengeImage?: string;
}

export interface AgentConfigOverrides {
  /** One URL, several comma-separated, or a list. */
  coordinatorUrl?: string | string[];
  enrollmentToken?: string;
  insecure?: boolean | string;
  coordinatorKey?: string;
  caFile?: string;
  coordinatorCertSha256?: string | string[];
  /** Replaced by enrollmentToken: refused with a message saying so. */
  providerToken?: string;
  dataDir?: string;
  executor?: string;
  allowUnsafeProcess?: boolean | string;
  region?: string;
  labels?: string | Record<string, string>;
  name?: string;
  logLevel?: string;
  logFormat?: string;
  simulatedGpus?: number | string;
  pollWaitMs?: number | string;
  gracefulTimeoutMs?: number | string;
  allowNetwork?: boolean | string;
  imageAllow?: string | string[];
  imageDeny?: string | string[];
  pidsLimit?: number | string;
  maxOutputBytes?: number | string;
  maxLogBytes?: number | string;
  maxScratchBytes?: number | string;
  defaultCpus?: number | string;
  defaultMemoryGb?: number | string;
  dockerSocket?: string;
  challengeRunner?: string;
  challengePython?: string;
  challengeImage?: string;
}

export function loadAgentConfig(env: Record<string, string | undefined>, overrides: AgentConfigOverrides = {}): AgentConfig {
  const problems: Problem[] = [];
  const bad = (path: string, message: string) => problems.push({ path, message });
  const pick = <T>(override: T | undefined, name: string): T | string | undefined => override ?? nonEmpty(env[name]);

  // GPUX_URL is the CLI's name for the same URL: accepted too, so one exported variable serves both (the specific name wins).
  const coordinatorUrls = urlList(pick(overrides.coordinatorUrl, 'GPUX_COORDINATOR_URL') ?? nonEmpty(env.GPUX_URL), bad);
  const coordinatorUrl = coordinatorUrls[0] ?? '';

  const home = nonEmpty(env.GPUX_HOME) ?? join(nonEmpty(env.HOME) ?? homedir(), '.gpux');
  const dataDir = pick(overrides.dataDir, 'GPUX_NODE_DIR') ?? join(home, 'node');

  const executorName = pick(overrides.executor, 'GPUX_NODE_EXECUTOR') ?? 'docker';
  let executor: ExecutorKind = 'docker';
  if (executorName === 'docker' || executorName === 'process' || executorName === 'simulated') executor = executorName;
  else bad('executor', `unknown executor "${executorName}" (expected docker, process or simulated)`);

  const allowUnsafeProcess = toBool(pick(overrides.allowUnsafeProcess, 'GPUX_ALLOW_UNSAFE_PROCESS'), 'allowUnsafeProcess', bad) ?? false;

  const labelsRaw = pick(overrides.labels, 'GPUX_NODE_LABELS');
  const labels = typeof labelsRaw === 'object' ? { ...labelsRaw } : parseLabels(labelsRaw ?? '', bad);

  const logLevelRaw = pick(overrides.logLevel, 'GPUX_LOG_LEVEL') ?? 'info';
  const logLevel = LOG_LEVELS.find((l) => l === logLevelRaw);
  if (!logLevel) bad('logLevel', `unknown log level "${logLevelRaw}" (expected ${LOG_LEVELS.join(', ')})`);
  const logFormatRaw = pick(overrides.logFormat, 'GPUX_LOG_FORMAT') ?? 'auto';
  const logFormat = LOG_FORMATS.find((f) => f === logFormatRaw);
  if (!logFormat) bad('logFormat', `unknown log format "${logFormatRaw}" (expected text, json or auto)`);

  const simulatedGpus = toInt(pick(overrides.simulatedGpus, 'GPUX_SIM_GPUS'), 'simulatedGpus', 0, 64, bad) ?? 1;
  const pollWaitMs = toInt(pick(overrides.pollWaitMs, 'GPUX_NODE_POLL_WAIT_MS'), 'pollWaitMs', 0, 60_000, bad) ?? 25_000;
  const gracefulTimeoutMs = toInt(pick(overrides.gracefulTimeoutMs, 'GPUX_NODE_GRACEFUL_TIMEOUT_MS'), 'gracefulTimeoutMs', 0, 24 * 3600_000, bad) ?? 60_000;

  const allowNetwork = toBool(pick(overrides.allowNetwork, 'GPUX_NODE_ALLOW_NETWORK'), 'allowNetwork', bad) ?? false;
  const imageAllow = patternList(pick(overrides.imageAllow, 'GPUX_NODE_IMAGE_ALLOW'), 'imageAllow', bad);
  const imageDeny = patternList(pick(overrides.imageDeny, 'GPUX_NODE_IMAGE_DENY'), 'imageDeny', bad);
  const pidsLimit = toInt(pick(overrides.pidsLimit, 'GPUX_NODE_PIDS_LIMIT'), 'pidsLimit', 16, 4_194_304, bad) ?? 4096;
  const maxOutputBytes = toInt(pick(overrides.maxOutputBytes, 'GPUX_NODE_MAX_OUTPUT_BYTES'), 'maxOutputBytes', 0, Number.MAX_SAFE_INTEGER, bad) ?? 1024 ** 3;
  const maxLogBytes = toInt(pick(overrides.maxLogBytes, 'GPUX_NODE_MAX_LOG_BYTES'), 'maxLogBytes', 0, Number.MAX_SAFE_INTEGER, bad) ?? 10 * 1024 ** 2;
  const maxScratchBytes = toInt(pick(overrides.maxScratchBytes, 'GPUX_NODE_MAX_SCRATCH_BYTES'), 'maxScratchBytes', 0, Number.MAX_SAFE_INTEGER, bad) ?? 10 * 1024 ** 3;
  const defaultCpus = toNumber(pick(overrides.defaultCpus, 'GPUX_NODE_DEFAULT_CPUS'), 'defaultCpus', 0.01, 1024, bad) ?? 2;
  const defaultMemoryGb = toNumber(pick(overrides.defaultMemoryGb, 'GPUX_NODE_DEFAULT_MEMORY_GB'), 'defaultMemoryGb', 0.01, 16384, bad) ?? 4;
  // A remote DOCKER_HOST only matters to the docker executor.
  const dockerSocket = socketOf(overrides.dockerSocket ?? nonEmpty(env.GPUX_DOCKER_SOCKET), nonEmpty(env.DOCKER_HOST), executor === 'docker' ? bad : () => {});

  const challengeRunnerName = pick(overrides.challengeRunner, 'GPUX_CHALLENGE_RUNNER') ?? 'auto';
  const challengeRunner = CHALLENGE_RUNNER_SETTINGS.find((r) => r === challengeRunnerName);
  if (!challengeRunner) bad('challengeRunner', `unknown challenge runner "${challengeRunnerName}" (expected ${CHALLENGE_RUNNER_SETTINGS.join(', ')})`);
  const challengePython = pick(overrides.challengePython, 'GPUX_CHALLENGE_PYTHON');
  const challengeImage = pick(overrides.challengeImage, 'GPUX_CHALLENGE_IMAGE');

  const enrollmentToken = pick(overrides.enrollmentToken, 'GPUX_ENROLLMENT_TOKEN');
  if (enrollmentToken !== undefined && !enrollmentToken.startsWith('gpux_enroll_')) {
    bad('enrollmentToken', 'must be a node enrollment token ("gpux_enroll_…") from `gpux enrollment create`, not an account token');
  }
  if (pick(overrides.providerToken, 'GPUX_PROVIDER_TOKEN') !== undefined) {
    bad('providerToken', 'GPUX_PROVIDER_TOKEN / --provider-token were replaced: create an enrollment token with `gpux enrollment create` and pass it as --enrollment-token (GPUX_ENROLLMENT_TOKEN)');
  }
  const insecure = toBool(pick(overrides.insecure, 'GPUX_INSECURE'), 'insecure', bad) ?? false;
  // No secrets in clear: the enrollment token goes only over https or to loopback (issue 19). The signed node
  // requests after it carry no secret and stay allowed: the agent obeys only orders sealed by its pinned coordinator key.
  // Registration may go to any of the URLs (failover), so every one must be safe for the token.
  for (const url of enrollmentToken === undefined ? [] : coordinatorUrls) {
    try {
      assertSafeTransport(url, { secret: 'an enrollment token', insecure, source: '--coordinator / GPUX_COORDINATOR_URL' });
    } catch (e) {
      if (!(e instanceof InsecureTransportError)) throw e;
      bad('coordinatorUrl', e.message);
    }
  }
  const coordinatorKey = pick(overrides.coordinatorKey, 'GPUX_COORDINATOR_KEY')?.toLowerCase();
  if (coordinatorKey !== undefined && !Fingerprint.safeParse(coordinatorKey).success) {
    bad('coordinatorKey', `"${coordinatorKey}" is not a key fingerprint: 64 hex characters, as the coordinator's operator gives it (GET /v1/coordinator/identity shows it)`);
  }
  const caFile = pick(overrides.caFile, 'GPUX_CA_FILE');
  const certPins = certPinList(pick(overrides.coordinatorCertSha256, 'GPUX_COORDINATOR_CERT_SHA256'), bad);
  for (const url of certPins.length > 0 ? coordinatorUrls : []) {
    if (!url.startsWith('https:')) bad('coordinatorCertSha256', `certificate pins need an https coordinator URL (got ${url})`);
  }
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
    logFormat: logFormat ?? 'auto',
    simulatedGpus,
    allowNetwork,
    imageAllow,
    imageDeny,
    pidsLimit,
    maxOutputBytes,
    maxLogBytes,
    maxScratchBytes,
    defaultCpus,
    defaultMemoryGb,
    dockerSocket,
    pollWaitMs,
    gracefulTimeoutMs,
    challengeRunner: challengeRunner ?? 'auto',
  };
  if (challengePython !== undefined) config.challengePython = challengePython;
  if (challengeImage !== undefined) config.challengeImage = challengeImage;
  if (region !== undefined) config.region = region;
  if (name !== undefined) config.name = name;
  if (enrollmentToken !== undefined) config.enrollmentToken = enrollmentToken;
  if (insecure) config.insecure = true;
  if (coordinatorKey !== undefined) config.coordinatorKey = coordinatorKey;
  if (caFile !== undefined) config.caFile = caFile;
  if (certPins.length > 0) config.coordinatorCertSha256 = certPins;
  if (coordinatorUrls.length > 1) config.coordinatorUrls = coordinatorUrls;
  return config;
}

/** Every coordinator URL of the config, in order (one unless several were given). */
export function coordinatorUrlsOf(config: Pick<AgentConfig, 'coordinatorUrl' | 'coordinatorUrls'>): string[] {
  return config.coordinatorUrls ?? [config.coordinatorUrl];
}

/** "https://a:8080, https://b:8080" (or a list) → normalized http(s) URLs without a trailing slash, duplicates dropped. */
function urlList(v: string | string[] | undefined, bad: (p: string, m: string) => void): string[] {
  if (v === undefined || (typeof v === 'string' && v.trim() === '') || (Array.isArray(v) && v.length === 0)) {
    bad('coordinatorUrl', 'the coordinator URL is required (--coordinator, GPUX_COORDINATOR_URL or GPUX_URL), e.g. http://127.0.0.1:8080');
    return [];
  }
  const parts = (Array.isArray(v) ? v : [v]).flatMap((u) => u.split(',')).map((u) => u.trim());
  const out: string[] = [];
  for (const [i, part] of parts.entries()) {
    const where = parts.length > 1 ? `URL ${i + 1} of ${parts.length}: ` : '';
    let url: string | undefined;
    try {
      const u = new URL(part);
      if (u.protocol === 'http:' || u.protocol === 'https:') url = u.toString().replace(/\/+$/, '');
    } catch {
      // reported below
    }
    if (url === undefined) {
      const hint = parts.length > 1 ? ' (several coordinators: comma-separated, e.g. https://a:8080,https://b:8080)' : '';
      bad('coordinatorUrl', part === '' ? `${where}empty${hint}` : `${where}"${part}" is not a valid http(s) URL${hint}`);
    } else if (!out.includes(url)) out.push(url);
  }
  return out;
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

/** "a, b,,c" → ['a', 'b', 'c']; a pattern is an image ref that may hold "*" wildcards. */
function patternList(v: string | string[] | undefined, path: string, bad: (p: string, m: string) => void): string[] {
  if (v === undefined) return [];
  const list = (Array.isArray(v) ? v : v.split(',')).map((p) => p.trim()).filter(Boolean);
  for (const p of list) if (!/^[A-Za-z0-9*][A-Za-z0-9._:/@*-]*$/.test(p)) bad(path, `"${p}" is not an image pattern (e.g. docker.io/library/*, ghcr.io/org/*, busybox:1.36)`);
  return list;
}

/** "AB:CD:…,abcd…" → normalized sha256 fingerprints (64 lowercase hex). */
function certPinList(v: string | string[] | undefined, bad: (p: string, m: string) => void): string[] {
  if (v === undefined) return [];
  const out: string[] = [];
  for (const raw of (Array.isArray(v) ? v : v.split(',')).map((p) => p.trim()).filter(Boolean)) {
    try {
      out.push(normalizePin(raw));
    } catch (e) {
      bad('coordinatorCertSha256', (e as Error).message);
    }
  }
  return out;
}

/** The Docker engine's unix socket: an explicit path wins, then DOCKER_HOST (unix:// only), then the usual path. */
function socketOf(explicit: string | undefined, dockerHost: string | undefined, bad: (p: string, m: string) => void): string {
  if (explicit) return explicit.replace(/^unix:\/\//, '');
  if (!dockerHost) return '/var/run/docker.sock';
  if (dockerHost.startsWith('unix://')) return dockerHost.slice('unix://'.length);
  bad('dockerSocket', `DOCKER_HOST=${dockerHost} is not a unix:// socket; only local engines over a unix socket are supported`);
  return '/var/run/docker.sock';
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

/** A positive decimal ("0.5", "2") from min to max. */
function toNumber(v: number | string | undefined, path: string, min: number, max: number, bad: (p: string, m: string) => void): number | undefined {
  if (v === undefined) return undefined;
  const n = typeof v === 'number' ? v : /^\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : Number.NaN;
  if (!Number.isFinite(n) || n < min || n > max) {
    bad(path, `"${v}" must be a number from ${min} to ${max}`);
    return undefined;
  }
  return n;
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

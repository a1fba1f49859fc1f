/**
 * `gpux node start` (run an agent), the operator commands list/get/cordon/uncordon/drain and `node tier set`,
 * and the provider commands `node price` (asks per class) and `node stake` (bond USDC behind a node).
 */
import { type AskView, formatAmount, type NodeView, SetAskRequest, type StakeView } from '@gpux/protocol';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { clientFor, connectionOptions, type Io, insecureAccepted, intArg, jsonOption } from '../context.js';
import { usageError } from '../errors.js';
import { type Column, formatAge, formatDuration, formatKeyValues, formatTable, formatTime, outputOption, render, toJson, writeData } from '../output.js';
import { readProfile } from '../profile.js';
import { waitForShutdown } from '../signals.js';
import { money, parseAmountArg } from '../money-format.js';

interface Flags {
  json?: boolean;
  coordinator?: string;
  token?: string;
}

interface StartFlags {
  coordinator?: string;
  enrollmentToken?: string;
  providerToken?: string;
  executor?: string;
  allowUnsafeProcess?: boolean;
  dataDir?: string;
  region?: string;
  label: Record<string, string>;
  name?: string;
  logLevel?: string;
  logFormat?: string;
  allowNetwork?: boolean;
  imageAllow?: string;
  imageDeny?: string;
  defaultCpus?: string;
  defaultMemoryGb?: string;
  maxScratchBytes?: string;
  coordinatorKey?: string;
  coordinatorCertSha256?: string;
}

export const UNSAFE_PROCESS_NOTE =
  'the local node runs jobs as plain host processes (process executor, no isolation): fine for your own jobs on your own dev network, never for anyone else’s';

function collectLabel(raw: string, prev: Record<string, string>): Record<string, string> {
  const eq = raw.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`"${raw}" is not key=value`);
  return { ...prev, [raw.slice(0, eq).trim()]: raw.slice(eq + 1).trim() };
}

const gpuSummary = (n: NodeView) => {
  const models = [...new Set(n.advertisement.gpus.map((g) => g.model))];
  return models.length ? models.join(', ') : null;
};

/** The reputation score as two decimals (0.50 for a node with outcomes that balance); '-' before its first outcome. */
export const reputationCell = (n: NodeView) => (n.reputation ? n.reputation.score.toFixed(2) : null);

/** `gpux node get`'s reputation line: score, the decayed weights behind it, and the audit streak. */
export function reputationLine(n: NodeView): string {
  const r = n.reputation;
  if (!r) return 'none yet (new node: neutral 0.50 for the scheduler)';
  return `${r.score.toFixed(2)} (good ${r.good.toFixed(1)}, bad ${r.bad.toFixed(1)}, decayed to ${formatTime(r.asOf)}; ${r.auditsPassed} audit${r.auditsPassed === 1 ? '' : 's'} passed in a row)`;
}

/** PROVEN: the class proven by the challenge, else the proof's state; '-' from a coordinator that shows no proof. */
export const provenCell = (n: NodeView) => (n.proof ? (n.proof.state === 'proven' ? (n.proof.provenClass ?? 'proven') : n.proof.state) : null);

/** SCORE: measured speed over the class table (1.00× = as expected), only while proven. */
export const proofScoreCell = (n: NodeView) => (n.proof?.state === 'proven' && n.proof.score !== null ? `${n.proof.score.toFixed(2)}×` : null);

/** `gpux node get`'s proof line: what was proven and when (TRUST.md wording), or why dispatch is blocked. */
export function proofLine(n: NodeView): string {
  const p = n.proof;
  if (!p) return 'none: the node has never been challenged (it takes no market job while the challenge is required)';
  const next = p.nextCheckAt !== null ? `; next check by ${formatTime(p.nextCheckAt)}` : '';
  const blocked = p.reason ? `; dispatch blocked: ${p.reason} (no stake is slashed)` : '';
  switch (p.state) {
    case 'proven': {
      const score = p.score !== null ? `, score ${p.score.toFixed(2)}× the class table` : '';
      return `proved a GPU of class ${p.provenClass ?? '?'} at ${formatTime(p.provenAt)} (timed, checked computation)${score}${next}${blocked}`;
    }
    case 'challenging':
      return `challenge in progress: takes no market job until it passes${p.provenClass ? ` (last proven ${p.provenClass} at ${formatTime(p.provenAt)})` : ''}${blocked}${next}`;
    case 'failed':
      return `failed${p.reason ? `: ${p.reason}` : ''}; dispatch blocked until a challenge passes (no stake is slashed)${next}`;
    case 'skipped':
      return 'skipped: this coordinator does not require the challenge (GPUX_CHALLENGE=off, the default of a private GPUX_MARKET=off cluster); nothing about its hardware is proven';
    case 'unproven':
      return `not proven yet: the challenge is issued at registration${blocked}${next}`;
  }
}

const TIER_MEANING: Record<NonNullable<NodeView['tier']>, string> = {
  open: 'open (stake, the timed challenge and sampled audits)',
  curated: 'curated (an operator vouches for it: gpux node tier set)',
  attested: 'attested (hardware TEE evidence checked by the attestation verifier)',
};

/** `wide` (-o wide) adds the host's cores and memory, executors, agent version, labels and registration time. */
export function nodeColumns(now: number, wide = false): Column<NodeView>[] {
  const columns: Column<NodeView>[] = [
    { header: 'ID', value: (n) => n.id },
    { header: 'STATUS', value: (n) => n.status },
    { header: 'ADMIN', value: (n) => (n.adminState === 'draining' && n.drained ? 'drained' : n.adminState) },
    { header: 'GPUS', value: (n) => `${n.gpusBusy}/${n.gpusTotal}`, align: 'right' },
    { header: 'MODEL', value: gpuSummary },
    { header: 'JOBS', value: (n) => n.activeAttempts, align: 'right' },
    { header: 'REP', value: reputationCell, align: 'right' },
    { header: 'PROVEN', value: provenCell },
    { header: 'SCORE', value: proofScoreCell, align: 'right' },
    { header: 'TIER', value: (n) => n.tier },
    { header: 'REGION', value: (n) => n.advertisement.region },
    { header: 'HOST', value: (n) => (n.simulated ? `${n.advertisement.hostname} (simulated)` : n.advertisement.hostname) },
    { header: 'HEARTBEAT', value: (n) => formatAge(n.lastHeartbeatAt, now) },
  ];
  if (!wide) return columns;
  return [
    ...columns,
    { header: 'CPUS', value: (n) => n.advertisement.cpuCores, align: 'right' },
    { header: 'MEMORY', value: (n) => `${Math.round(n.advertisement.memoryMb / 1024)} GiB`, align: 'right' },
    { header: 'EXECUTORS', value: (n) => n.advertisement.executors.join(',') },
    { header: 'AGENT', value: (n) => n.advertisement.agentVersion },
    { header: 'LABELS', value: (n) => Object.entries(n.advertisement.labels).map(([k, v]) => `${k}=${v}`).join(',') },
    { header: 'REGISTERED', value: (n) => formatTime(n.registeredAt) },
  ];
}

export function formatNode(n: NodeView): string {
  const a = n.advertisement;
  const head = formatKeyValues([
    ['id', n.id],
    ['status', n.status],
    ['admin state', n.adminState + (n.adminState === 'draining' ? (n.drained ? ' (drained)' : ' (attempts still running)') : '')],
    ['host', `${a.hostname} (${a.os}/${a.arch}, ${a.cpuCores} cores, ${Math.round(a.memoryMb / 1024)} GiB)`],
    ['agent', a.agentVersion],
    ['executors', a.executors.join(', ')],
    ['docker', a.docker.available ? `${a.docker.version ?? 'available'} (gpu runtime ${a.docker.gpuRuntime})` : `unavailable${a.docker.problem ? `: ${a.docker.problem}` : ''}`],
    ['region', a.region],
    ['labels', Object.entries(a.labels).map(([k, v]) => `${k}=${v}`).join(', ')],
    ['gpus', `${n.gpusBusy} busy of ${n.gpusTotal}`],
    ['active attempts', n.activeAttempts],
    ['reputation', reputationLine(n)],
    ['proof', proofLine(n)],
    ['tier', n.tier ? TIER_MEANING[n.tier] : undefined],
    ['simulated', n.simulated ? 'yes' : 'no'],
    ['registered', formatTime(n.registeredAt)],
    ['last heartbeat', formatTime(n.lastHeartbeatAt)],
  ]);
  if (!a.gpus.length) return head;
  return `${head}\n${formatTable(a.gpus, [
    { header: 'INDEX', value: (g) => g.index, align: 'right' },
    { header: 'MODEL', value: (g) => g.model },
    { header: 'VRAM', value: (g) => `${Math.round(g.vramMb / 1024)} GiB`, align: 'right' },
    { header: 'VENDOR', value: (g) => g.vendor },
    { header: 'UUID', value: (g) => g.uuid },
  ])}`;
}

export function registerNode(program: Command, io: Io): void {
  const node = program.command('node').description('run a node agent, administer nodes (operator token), set prices and stake (provider token)');

  node
    .command('start')
    .description('run a node agent until Ctrl-C or SIGTERM')
    .option('--coordinator <url[,url]>', 'coordinator URL, or several comma-separated (replicas: fail over) (default: $GPUX_COORDINATOR_URL, $GPUX_URL, then the profile)')
    .option(
      '--enrollment-token <token>',
      'enrollment token (gpux_enroll_…, from `gpux enrollment create`) of the account that owns this node, is paid for its jobs and stakes it (default $GPUX_ENROLLMENT_TOKEN)',
    )
    .addOption(new Option('--provider-token <token>', 'replaced by --enrollment-token').hideHelp())
    .option(
      '--coordinator-key <fingerprint>',
      "the coordinator's signing key to pin (64 hex, from its operator; default $GPUX_COORDINATOR_KEY, else the one in the enrollment token, else trust on first use)",
    )
    .option('--coordinator-cert-sha256 <fp[,fp]>', "pin the coordinator's TLS certificate: sha256 of its certificate or an issuing CA's (default $GPUX_COORDINATOR_CERT_SHA256)")
    .option('--executor <kind>', 'docker (default: each job in an isolated container), process or simulated')
    .option('--allow-unsafe-process', 'let the process executor run jobs as host processes (trusted jobs only)')
    .option('--allow-network', 'give a network to the containers of jobs that ask for one (default: none)')
    .option('--image-allow <patterns>', 'comma-separated images this node runs, e.g. "docker.io/library/*,ghcr.io/org/*" (default: all)')
    .option('--image-deny <patterns>', 'comma-separated images this node never runs (wins over --image-allow)')
    .option('--data-dir <dir>', 'node key and work dirs (default $GPUX_HOME/node)')
    .option('--region <region>', 'region advertised to the scheduler')
    .option('--label <k=v>', 'a label to advertise (repeatable)', collectLabel, {})
    .option('--name <name>', 'advertised hostname')
    .option('--default-cpus <n>', 'CPU limit of a job whose spec sets no cpuCores (default 2, never more than the host has)')
    .option('--default-memory-gb <n>', 'memory limit of a job whose spec sets no memoryGb (default 4, never more than the host has)')
    .option('--max-scratch-bytes <n>', 'quota of a job\'s /gpux/scratch; past it the job is stopped (default 10 GiB)')
    .option('--log-level <level>', 'debug, info, warn or error (default info)')
    .option('--log-format <format>', 'text (readable lines), json (one JSON object a line) or auto: text on a terminal, else json (default $GPUX_LOG_FORMAT, then auto)')
    .action(async (flags: StartFlags) => {
      if (flags.logFormat !== undefined && !['text', 'json', 'auto'].includes(flags.logFormat)) throw usageError(`--log-format must be text, json or auto, got "${flags.logFormat}"`);
      const shutdown = waitForShutdown();
      const { checkEngine, coordinatorUrlsOf, loadAgentConfig, startAgent } = await import('@gpux/agent'); // lazy: keeps other commands fast
      const fallbackUrl = io.env.GPUX_COORDINATOR_URL ? undefined : io.env.GPUX_URL || readProfile(io.env).url;
      const config = loadAgentConfig(io.env, {
        coordinatorUrl: flags.coordinator ?? fallbackUrl,
        enrollmentToken: flags.enrollmentToken,
        ...(insecureAccepted(io) ? { insecure: true } : {}), // global --insecure or GPUX_INSECURE=1
        providerToken: flags.providerToken,
        executor: flags.executor,
        allowUnsafeProcess: flags.allowUnsafeProcess,
        dataDir: flags.dataDir,
        region: flags.region,
        labels: Object.keys(flags.label).length ? flags.label : undefined,
        name: flags.name,
        logLevel: flags.logLevel,
        logFormat: flags.logFormat,
        allowNetwork: flags.allowNetwork,
        imageAllow: flags.imageAllow,
        imageDeny: flags.imageDeny,
        defaultCpus: flags.defaultCpus,
        defaultMemoryGb: flags.defaultMemoryGb,
        maxScratchBytes: flags.maxScratchBytes,
        coordinatorKey: flags.coordinatorKey,
        ...(io.caFile ? { caFile: io.caFile } : {}), // global --ca-file (GPUX_CA_FILE is read by loadAgentConfig)
        coordinatorCertSha256: flags.coordinatorCertSha256,
      });
      // Every coordinator refuses a node without one: say so now rather than after the first registration.
      if (!config.enrollmentToken) {
        throw usageError('gpux node start needs --enrollment-token (or GPUX_ENROLLMENT_TOKEN): create one with `gpux enrollment create --name <what>` using your account token');
      }
      if (config.executor === 'docker') {
        const engine = await checkEngine(config.dockerSocket); // an unreachable engine stops here, saying what to do
        io.out.write(`executor: docker (engine ${engine.version} reachable at ${engine.socketPath})\n`);
      } else io.out.write(`executor: ${config.executor} (chosen with --executor ${config.executor}${config.executor === 'process' ? '; jobs run as host processes, no isolation' : ''})\n`);
      // Ctrl-C while the coordinator is still unreachable ends the retries instead of being ignored.
      const interrupted = new AbortController();
      void shutdown.then(() => interrupted.abort());
      const agent = await startAgent(config, { signal: interrupted.signal }).catch((err: unknown) => {
        if (interrupted.signal.aborted) return null;
        throw err;
      });
      const urls = coordinatorUrlsOf(config).join(', ');
      if (!agent) return void io.out.write(`stopped before ${urls} answered\n`);
      io.out.write(`node ${agent.nodeId} connected to ${urls} (${config.executor} executor); Ctrl-C to stop\n`);
      const signal = await shutdown;
      io.out.write(`${signal}: letting running jobs finish (up to ${Math.round(config.gracefulTimeoutMs / 1000)}s; Ctrl-C again to force)\n`);
      await agent.stop({ graceful: true });
    });

  outputOption(
    connectionOptions(
      node
        .command('list')
        .description('list nodes')
        .option('--status <status>', 'online or offline')
        .option('--limit <n>', 'at most this many nodes (1-1000)', intArg('--limit', 1, 1000), 100)
        .option('--cursor <cursor>', 'continue from an earlier page'),
    ),
  ).action(async (flags: Flags & { status?: string; limit: number; cursor?: string }) => {
    if (flags.status !== undefined && flags.status !== 'online' && flags.status !== 'offline') throw usageError(`--status must be online or offline, got "${flags.status}"`);
    const res = await clientFor(io, flags, 'operator').listNodes({ status: flags.status, limit: flags.limit, cursor: flags.cursor });
    render(io, flags, res, (wide) =>
      res.nodes.length === 0 ? 'no nodes\n' : formatTable(res.nodes, nodeColumns(Date.now(), wide)) + (res.nextCursor ? `more: gpux node list --cursor ${res.nextCursor}\n` : ''),
    );
  });

  outputOption(connectionOptions(node.command('get').description('one node').argument('<id>', 'node id'))).action(async (id: string, flags: Flags) => {
    const res = await clientFor(io, flags, 'operator').getNode(id);
    render(io, flags, res, () => formatNode(res.node));
  });

  const admin = [
    ['cordon', 'stop placing new work on the node', 'cordonNode'],
    ['uncordon', 'let the node take work again', 'uncordonNode'],
    ['drain', 'no new work; running attempts finish', 'drainNode'],
  ] as const;
  for (const [name, description, method] of admin) {
    jsonOption(connectionOptions(node.command(name).description(description).argument('<id>', 'node id'))).action(async (id: string, flags: Flags) => {
      const res = await clientFor(io, flags, 'operator')[method](id);
      if (flags.json) return void io.out.write(toJson(res));
      const n = res.node;
      io.out.write(`node ${n.id} is now ${n.adminState}${n.adminState === 'draining' ? (n.drained ? ' (drained)' : ` (${n.activeAttempts} attempt(s) still running)`) : ''}\n`);
    });
  }

  registerNodeTier(node, io);
  registerNodePrice(node, io);
  registerNodeStake(node, io);
  registerNodePenalties(node, io);
}

// ---- operator: trust tier ----

const TIERS = ['open', 'curated', 'attested'] as const;

function registerNodeTier(node: Command, io: Io): void {
  const tier = node.command('tier').description('trust tiers (operator token): curated nodes are vouched for by an operator');
  jsonOption(
    connectionOptions(
      tier
        .command('set')
        .description('vouch for a node (curated) or take it back (open); attested comes only from verified hardware evidence')
        .argument('<id>', 'node id')
        .argument('<tier>', 'curated or open'),
    ),
  ).action(async (id: string, tierText: string, flags: Flags) => {
    const t = tierText.trim().toLowerCase();
    if (!(TIERS as readonly string[]).includes(t)) throw usageError(`TIER must be curated or open, got "${tierText}"`);
    const res = await clientFor(io, flags, 'operator').setNodeTier(id, t as (typeof TIERS)[number]);
    if (flags.json) return void io.out.write(toJson(res));
    const n = res.node;
    io.out.write(`node ${n.id} is now ${n.tier ? TIER_MEANING[n.tier] : t}\n`);
  });
}

// ---- provider: asks ----

/** Asks carry no asset; both assets have 6 decimals, so the number reads the same in either. */
export function formatAsks(asks: readonly AskView[]): string {
  if (asks.length === 0) return 'no asks: set one with `gpux node price set CLASS PRICE`\n';
  const table = formatTable(asks, [
    { header: 'CLASS', value: (a) => a.class },
    { header: 'ASK/GPU-HOUR', value: (a) => formatAmount(a.pricePerGpuHour, 'usdc', { symbol: false }), align: 'right' },
    { header: 'UPDATED', value: (a) => formatTime(a.updatedAt) },
  ]);
  return asks.some((a) => a.class === 'cpu') ? `${table}cpu is priced per job-hour\n` : table;
}

/** CLASS and PRICE of `node price set`: PRICE is a decimal, or "none" to remove the ask. Usage errors before any request. */
export function parseAskArgs(classText: string, priceText: string): { class: string; pricePerGpuHour: number | null } {
  const cls = SetAskRequest.shape.class.safeParse(classText);
  if (!cls.success) throw usageError(`CLASS "${classText}" ${cls.error.issues[0]?.message ?? 'is invalid'} (see \`gpux market prices\`)`);
  if (priceText.trim().toLowerCase() === 'none') return { class: classText, pricePerGpuHour: null };
  return { class: classText, pricePerGpuHour: parseAmountArg('PRICE', priceText, 'usdc', { allowZero: true }) };
}

function registerNodePrice(node: Command, io: Io): void {
  const price = node.command('price').description('your asks: the least you earn per GPU-hour after the fee, per class (provider token)');

  jsonOption(
    connectionOptions(
      price
        .command('set')
        .description('set your ask for a class (all your nodes of that class); "none" removes it')
        .argument('<class>', 'a class like nvidia-h100-80gb or cpu')
        .argument('<price>', 'per GPU-hour as a decimal, e.g. 2.5, or none'),
    ),
  ).action(async (classText: string, priceText: string, flags: Flags) => {
    const ask = parseAskArgs(classText, priceText);
    const res = await clientFor(io, flags, 'buyer').setAsk(ask.class, ask.pricePerGpuHour);
    if (flags.json) return void io.out.write(toJson(res));
    io.out.write(
      ask.pricePerGpuHour === null
        ? `ask for ${ask.class} removed\n`
        : `ask for ${ask.class}: ${formatAmount(ask.pricePerGpuHour, 'usdc', { symbol: false })} ${ask.class === 'cpu' ? 'per job-hour after the fee, for CPU-only jobs on your nodes' : `per GPU-hour after the fee, for all your ${ask.class} nodes`}\n`,
    );
    io.out.write(formatAsks(res.asks));
  });

  outputOption(connectionOptions(price.command('list').description('your asks per class'))).action(async (flags: Flags) => {
    const res = await clientFor(io, flags, 'buyer').myAsks();
    render(io, flags, res, () => formatAsks(res.asks));
  });
}

// ---- provider: stake ----

export function formatStake(s: StakeView, now: number): string {
  const unbonding = s.unbonding.reduce((sum, u) => sum + u.amount, 0);
  const head = formatKeyValues([
    ['node', s.nodeId],
    ['provider', s.providerId],
    ['staked', money(s.staked, s.asset)],
    ['locked', `${money(s.locked, s.asset)} (backs active attempts)`],
    ['free', money(s.free, s.asset)],
    ['unbonding', money(unbonding, s.asset)],
  ]);
  if (s.unbonding.length === 0) return head;
  return `${head}\n${formatTable(s.unbonding, [
    { header: 'UNBONDING', value: (u) => u.id },
    { header: 'AMOUNT', value: (u) => money(u.amount, s.asset), align: 'right' },
    { header: 'RELEASES', value: (u) => `${formatTime(u.releaseAt)} (${releaseIn(u.releaseAt, now)})` },
  ])}`;
}

const releaseIn = (at: number, now: number) => (at <= now ? 'due' : `in ${formatDuration(at - now)}`);

/** After `node stake withdraw`: the unbonding just made is the latest of that amount. */
export function formatUnbond(s: StakeView, amount: number, now: number): string {
  const mine = s.unbonding.filter((u) => u.amount === amount);
  const latest = (mine.length ? mine : s.unbonding).reduce<StakeView['unbonding'][number] | undefined>((a, u) => (a === undefined || u.releaseAt > a.releaseAt ? u : a), undefined);
  const when = latest ? ` at ${formatTime(latest.releaseAt)} (${releaseIn(latest.releaseAt, now)})` : ' after the unbonding delay';
  return `unbonding ${money(amount, s.asset)} from node ${s.nodeId}: it returns to your wallet${when}; ${money(s.free, s.asset)} stays free\n`;
}

function registerNodePenalties(node: Command, io: Io): void {
  outputOption(
    connectionOptions(node.command('penalties').description("a node's penalties with their evidence: slashes for equivocation (its provider or an operator)").argument('<node>', 'node id')),
  ).action(async (nodeId: string, flags: Flags) => {
    const res = await clientFor(io, flags, 'buyer').nodePenalties(nodeId);
    if (writeData(io, flags, res)) return;
    io.out.write(formatKeyValues([['node', res.nodeId], ['banned', res.banned ? 'yes' : 'no'], ['public key', res.publicKey]]));
    if (res.penalties.length === 0) return void io.out.write('no penalties\n');
    io.out.write(
      `\n${formatTable(res.penalties, [
        { header: 'EVIDENCE', value: (p) => p.id },
        { header: 'KIND', value: (p) => p.kind },
        { header: 'WHEN', value: (p) => formatTime(p.at) },
        { header: 'JOB', value: (p) => p.jobId },
        { header: 'ATTEMPT', value: (p) => p.attemptId },
        { header: 'SLASHED', value: (p) => money(p.slashed, 'usdc'), align: 'right' },
        { header: 'OUTPUT DIGESTS', value: (p) => `${p.evidence.first.commitment.outputDigest.slice(0, 12)}… ≠ ${p.evidence.second.commitment.outputDigest.slice(0, 12)}…` },
      ])}`,
    );
    io.out.write('both commitments and signatures: gpux node penalties --json\n');
  });
}

function registerNodeStake(node: Command, io: Io): void {
  const stake = node.command('stake').description("USDC bonded behind a node: it backs the node's jobs (provider token)");

  outputOption(connectionOptions(stake.command('show').description("a node's stake: bonded, locked, free, unbonding").argument('<node>', 'node id'))).action(
    async (nodeId: string, flags: Flags) => {
      const res = await clientFor(io, flags, 'buyer').nodeStake(nodeId);
      render(io, flags, res, () => formatStake(res.stake, Date.now()));
    },
  );

  jsonOption(
    connectionOptions(
      stake.command('add').description("move USDC from your wallet to the node's stake").argument('<node>', 'node id').argument('<amount>', 'USDC as a decimal, e.g. 100'),
    ),
  ).action(async (nodeId: string, amountText: string, flags: Flags) => {
    const amount = parseAmountArg('AMOUNT', amountText, 'usdc');
    const res = await clientFor(io, flags, 'buyer').addStake(nodeId, amount);
    if (flags.json) return void io.out.write(toJson(res));
    io.out.write(`staked ${money(amount, 'usdc')} on node ${nodeId}\n${formatStake(res.stake, Date.now())}`);
  });

  jsonOption(
    connectionOptions(
      stake
        .command('withdraw')
        .description('unbond free stake; it returns to your wallet after the unbonding delay')
        .argument('<node>', 'node id')
        .argument('<amount>', 'USDC as a decimal, e.g. 50'),
    ),
  ).action(async (nodeId: string, amountText: string, flags: Flags) => {
    const amount = parseAmountArg('AMOUNT', amountText, 'usdc');
    const res = await clientFor(io, flags, 'buyer').unstake(nodeId, amount);
    io.out.write(flags.json ? toJson(res) : formatUnbond(res.stake, amount, Date.now()));
  });
}

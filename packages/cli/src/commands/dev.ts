/** `gpux dev`: a whole network in one process (coordinator on SQLite, a local node, optional simulated nodes) plus a sample job. */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { CoordinatorConfig } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { formatAmount } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import type { Command } from 'commander';
import { type Io, intArg } from '../context.js';
import { explainListenError, formatError, usageError } from '../errors.js';
import { writeProfile } from '../profile.js';
import { warnLogger } from '../cli-logger.js';
import { DEV_LOCAL_LABEL, sampleJobSpec } from '../sample-job.js';
import { waitForShutdown } from '../signals.js';
import { UNSAFE_PROCESS_NOTE } from './node.js';
import { fundDevNetwork } from './dev-funds.js';
import { runSampleJob } from './dev-sample.js';

interface DevFlags {
  dataDir?: string;
  port?: number;
  simulatedNodes: number;
  sampleJob: boolean;
  executor: string;
  exitAfterSample?: boolean;
}

type Cleanup = [name: string, stop: () => Promise<void> | void];

export function registerDev(program: Command, io: Io): void {
  program
    .command('dev')
    .description('run a local network in one process: coordinator, a local node, a sample job; Ctrl-C stops it')
    .option('--data-dir <dir>', 'keep the network state here (default: a temp dir removed on exit)')
    .option('--port <n>', 'coordinator port; 0 picks a free one (default 7070)', intArg('--port', 0, 65535))
    .option('--simulated-nodes <n>', 'also start this many simulated nodes', intArg('--simulated-nodes', 0, 10_000), 0)
    .option('--no-sample-job', 'do not submit the sample job')
    .option('--executor <kind>', 'executor of the local node: auto (docker when an engine is reachable, else process), docker, process or simulated', 'auto')
    .option('--exit-after-sample', 'exit once the sample job is done: 0 if it succeeded (for tests and CI)')
    .action((flags: DevFlags) => runDev(io, flags));
}

async function runDev(io: Io, flags: DevFlags): Promise<void> {
  if (!['auto', 'docker', 'process', 'simulated'].includes(flags.executor)) throw usageError(`--executor must be auto, docker, process or simulated, got "${flags.executor}"`);
  const shutdown = waitForShutdown();
  const interrupted = new AbortController();
  void shutdown.then(() => interrupted.abort(new Error('interrupted')));
  const cleanups: Cleanup[] = [];
  const say = (line: string) => io.out.write(`${line}\n`);
  const logger = warnLogger((line) => io.err.write(line), 'node');
  try {
    // Loaded here, not at the top: the server's dependencies would slow every other command.
    const [{ cryptoRandom, issueEnrollment, issueToken, loadCoordinatorConfig, startCoordinator }, agentPkg] = await Promise.all([import('@gpux/coordinator'), import('@gpux/agent')]);
    const { loadAgentConfig, startAgent, startSimulatedNodes } = agentPkg;
    const choice = await chooseExecutor(flags.executor, io.env, agentPkg);
    const dataDir = flags.dataDir ? resolve(flags.dataDir) : mkdtempSync(join(tmpdir(), 'gpux-dev-'));
    if (flags.dataDir) mkdirSync(dataDir, { recursive: true });
    else cleanups.push(['temp data dir', () => rmSync(dataDir, { recursive: true, force: true, maxRetries: 3 })]);

    const config = loadCoordinatorConfig(io.env, {
      dataDir: join(dataDir, 'coordinator'),
      db: `sqlite:${join(dataDir, 'coordinator', 'coordinator.db')}`,
      host: '127.0.0.1', // the local node may run jobs unsandboxed (process executor): never expose this network
      port: flags.port,
      logLevel: (io.env.GPUX_LOG_LEVEL ?? 'warn') as CoordinatorConfig['logLevel'],
      devMint: true, // a dev network: accounts may mint test funds
      // One provider registers every dev node at once: its registration budget and node cap fit the fleet.
      registerRatePerMin: Math.max(30, 2 * (flags.simulatedNodes + 1)),
      maxNodesPerProvider: Math.max(1000, flags.simulatedNodes + 1),
      // Simulated nodes claim GPUs they do not have and could never pass the proof-of-hardware challenge:
      // a dev network skips it unless GPUX_CHALLENGE says otherwise.
      ...(io.env.GPUX_CHALLENGE === undefined && { challenge: 'off' as const }),
      // A dev network stays plain HTTP on loopback (issue 19), whatever GPUX_TLS_* the shell has.
      tlsCertFile: null,
      tlsKeyFile: null,
    });
    mkdirSync(config.dataDir, { recursive: true });
    const coord = await startCoordinator(config).catch((err: unknown) => {
      throw explainListenError(err, config.port);
    });
    cleanups.push(['coordinator', () => coord.close()]);

    const operatorToken = coord.bootstrapOperatorToken ?? (await issueToken(coord.store, { role: 'operator', name: 'dev-operator' }, systemClock, cryptoRandom)).token;
    const buyerToken = (await issueToken(coord.store, { role: 'buyer', name: 'dev-buyer' }, systemClock, cryptoRandom)).token;
    const provider = await issueToken(coord.store, { role: 'buyer', name: 'dev-provider' }, systemClock, cryptoRandom);
    const providerToken = provider.token;
    // The nodes register with an enrollment token of the provider: it can do nothing else.
    const enrollmentToken = (await issueEnrollment(coord.store, { accountId: provider.accountId, name: 'dev-nodes', fingerprint: coord.signingKey().fingerprint }, systemClock, cryptoRandom)).token;

    const agentConfig = loadAgentConfig(io.env, {
      coordinatorUrl: coord.url,
      dataDir: join(dataDir, 'node'),
      executor: choice.kind,
      allowUnsafeProcess: choice.kind === 'process',
      labels: { [DEV_LOCAL_LABEL]: 'true' },
      logLevel: io.env.GPUX_LOG_LEVEL ?? 'warn',
      enrollmentToken,
    });
    const agent = await startAgent(agentConfig, io.env.GPUX_LOG_LEVEL ? {} : { logger });
    cleanups.push(['local node', () => agent.stop()]);

    const nodeIds = [agent.nodeId];
    if (flags.simulatedNodes > 0) {
      const sims = await startSimulatedNodes(flags.simulatedNodes, { coordinatorUrl: coord.url, dataDir: join(dataDir, 'simulated'), random: cryptoRandom, logger, enrollmentToken });
      cleanups.push(['simulated nodes', () => sims.stop()]);
      nodeIds.push(...sims.nodes.map((n) => n.nodeId));
    }
    const buyerClient = new GpuxClient({ url: coord.url, token: buyerToken });
    const funds = config.market ? await fundDevNetwork(buyerClient, new GpuxClient({ url: coord.url, token: providerToken }), nodeIds, interrupted.signal) : undefined;
    const profilePath = writeProfile(io.env, { url: coord.url, token: buyerToken, operatorToken });

    say(`gpux dev: a local network in ${dataDir}${flags.dataDir ? '' : ' (removed on exit)'}`);
    say(`coordinator: ${coord.url}`);
    say(`dashboard: ${coord.url}/`);
    say(`local node: ${agent.nodeId} (${choice.kind} executor)`);
    say(`executor: ${choice.kind} (${choice.reason})`);
    for (const note of choice.notes) say(`note: ${note}`);
    if (choice.kind === 'process') say(`note: ${UNSAFE_PROCESS_NOTE}`);
    if (flags.simulatedNodes > 0) say(`simulated nodes: ${flags.simulatedNodes}`);
    say(`operator token: ${operatorToken}`);
    say(`buyer token: ${buyerToken}`);
    say(`provider token: ${providerToken} (owns the nodes; earns what they are paid)`);
    say(`enrollment token: ${enrollmentToken} (registers more nodes for the provider: gpux node start --enrollment-token …)`);
    if (funds) say(`test funds: ${formatAmount(funds.buyerFunds, 'usdc')} minted to the buyer; each node staked ${formatAmount(funds.stakePerNode, 'usdc')}`);
    else say('market: off (GPUX_MARKET=off): jobs are free');
    say(`profile: ${profilePath} (url and tokens; \`gpux job …\` in another terminal needs no flags)`);
    say('try:');
    say('  npx gpux job submit examples/hello.yaml --wait');
    say('  npx gpux job list');
    say('  npx gpux node list');
    say('  npx gpux wallet balance && npx gpux market prices');

    if (flags.sampleJob) {
      const ok = await runSampleJob(io, buyerClient, interrupted.signal).catch((err: unknown) => {
        if (interrupted.signal.aborted) return false;
        io.err.write(formatError(err, io.env.GPUX_DEBUG === '1'));
        return false;
      });
      if (flags.exitAfterSample) {
        io.exitCode = ok ? 0 : 1;
        return;
      }
      if (!ok && !interrupted.signal.aborted) say('the sample job did not succeed; the network keeps running');
    } else if (flags.exitAfterSample) return;

    if (!interrupted.signal.aborted) say('gpux dev is running; press Ctrl-C to stop');
    const signal = await shutdown;
    say(`${signal}: stopping the local network`);
  } finally {
    await stopAll(io, cleanups);
  }
}

type AgentModule = typeof import('@gpux/agent');

/**
 * auto: docker when an engine is reachable and the sample job's image is there (or can be made from the host's
 * busybox; nothing is pulled), else process. An explicit --executor docker that cannot work is an error, not a fallback.
 */
async function chooseExecutor(flag: string, env: NodeJS.ProcessEnv, agent: AgentModule): Promise<{ kind: 'docker' | 'process' | 'simulated'; reason: string; notes: string[] }> {
  if (flag === 'process') return { kind: 'process', reason: 'chosen with --executor process; jobs run as host processes', notes: [] };
  if (flag === 'simulated') return { kind: 'simulated', reason: 'chosen with --executor simulated; jobs only sleep', notes: [] };
  const remote = env.DOCKER_HOST && !env.DOCKER_HOST.startsWith('unix://') && !env.GPUX_DOCKER_SOCKET;
  const choice = remote
    ? { kind: 'process' as const, reason: `DOCKER_HOST=${env.DOCKER_HOST} is not a local unix socket; jobs run as host processes`, notes: [] }
    : await agent.chooseLocalExecutor({ socketPath: env.GPUX_DOCKER_SOCKET || agent.defaultSocketPath(env), image: sampleJobSpec().image });
  if (flag === 'docker' && choice.kind !== 'docker') throw usageError(`--executor docker cannot work here: ${choice.reason.replace(/; jobs run as host processes$/, '')}`);
  return choice;
}

/** Stop in reverse start order; one failing step must not leave the others running. */
async function stopAll(io: Io, cleanups: Cleanup[]): Promise<void> {
  for (const [name, stop] of cleanups.reverse()) {
    try {
      await stop();
    } catch (err) {
      io.err.write(`warning: stopping the ${name} failed: ${err instanceof Error ? err.message : String(err)}\n`);
    }
  }
}

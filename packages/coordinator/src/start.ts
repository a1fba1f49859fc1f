/**
 * startCoordinator: open and migrate the store, bootstrap the first operator token, extend active leases
 * (a restart must not expire healthy nodes), rebuild the capacity index, start the loops, listen.
 */
import type { SecureContextOptions } from 'node:tls';
import { type Clock, type Random, type SettlementAdapter, type Store, systemClock } from '@gpux/core';
import type { CoordinatorKey } from '@gpux/protocol';
import type { Logger } from 'pino';
import { buildApp } from './app.js';
import { busFor, startReplica } from './cluster/replica.js';
import { type CoordinatorConfig, storePolicies } from './config.js';
import { loadOrCreateKeyFile } from './identity/key-file.js';
import { Signer } from './identity/signer.js';
import { createLogger } from './logger.js';
import { rebuildIndex } from './loops/capacity.js';
import { cryptoRandom } from './random.js';
import { createRuntime } from './runtime.js';
import { openStore } from './store/index.js';
import { loadTlsPair, type TlsFiles, type TlsPair, watchTlsFiles } from './tls.js';
import { issueToken } from './tokens.js';

export interface RunningCoordinator {
  /** Where clients reach it: config.publicUrl, else the address it listens on. */
  url: string;
  port: number;
  store: Store;
  config: CoordinatorConfig;
  /** The key the coordinator signs with now (issue 19): its fingerprint goes into enrollment tokens. */
  signingKey(): CoordinatorKey;
  /** The operator token made on first start (no operator token existed); print it once. null otherwise. */
  bootstrapOperatorToken: string | null;
  /** Stop loops, end long-polls, close the server, then the store (only a store it opened). Safe twice. */
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: Clock;
  random?: Random;
  logger?: Logger;
  /** Use this store instead of opening config.db; the caller keeps ownership and closes it. */
  store?: Store;
  /** Where withdrawals are paid out; default the manual adapter (an operator records each payout). */
  settlementAdapter?: SettlementAdapter;
  /** How often the TLS certificate and key files are polled for a change. Default 2000 (tls.ts); tests go faster. */
  tlsWatchIntervalMs?: number;
  /** How often the coordinator key file is polled for a rotation. Default 5000 (identity/signer.ts); tests go faster. */
  keyWatchIntervalMs?: number;
}

function urlFor(host: string, port: number, tls: boolean): string {
  const h = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
  return `${tls ? 'https' : 'http'}://${h.includes(':') ? `[${h}]` : h}:${port}`;
}

export async function startCoordinator(config: CoordinatorConfig, opts: StartOptions = {}): Promise<RunningCoordinator> {
  const clock = opts.clock ?? systemClock;
  const random = opts.random ?? cryptoRandom;
  const logger = opts.logger ?? createLogger(config.logLevel);
  // Before the store opens: a bad certificate path or pair is a config error, reported before anything starts.
  const tlsFiles: TlsFiles | null = config.tlsCertFile !== null && config.tlsKeyFile !== null ? { certFile: config.tlsCertFile, keyFile: config.tlsKeyFile } : null;
  const tls: TlsPair | null = tlsFiles ? loadTlsPair(tlsFiles) : null;
  // Also before the store: a corrupt key file must stop the start (agents pinned its key), never be replaced.
  const keys = loadOrCreateKeyFile(config.coordinatorKeyFile, clock.now());
  const signer = new Signer(keys.file, clock);
  if (keys.created) logger.info({ keyFile: config.coordinatorKeyFile, fingerprint: signer.current().fingerprint }, 'created the coordinator key (back it up with the database)');
  const store = opts.store ?? (await openStore(config.db, { onModeFixed: (message) => logger.warn(message), policies: storePolicies(config), pgNamedStatements: config.pgNamedStatements }));
  const ownsStore = opts.store === undefined;
  try {
    await store.migrate();
    let bootstrapOperatorToken: string | null = null;
    if ((await store.countTokens('operator')) === 0) {
      bootstrapOperatorToken = (await issueToken(store, { role: 'operator', name: 'bootstrap' }, clock, random)).token;
      logger.info('issued the bootstrap operator token');
    }
    const bus = busFor(store, config.db, logger);
    const rt = createRuntime({ store, config, clock, random, logger, signer, bus, ...(opts.settlementAdapter ? { settlementAdapter: opts.settlementAdapter } : {}) });
    const extended = await store.extendActiveLeases(clock.now() + config.leaseTtlMs);
    // Before the index fills: with the challenge required, a node not proven is never schedulable.
    rt.index.requireProof = config.challenge === 'required';
    const counts = await rebuildIndex(rt);
    const app = buildApp({ store, config, clock, random, logger, runtime: rt, ...(tls ? { tls } : {}) });
    await app.listen({ host: config.host, port: config.port });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const stopTlsWatch = tlsFiles ? watchTlsReload(app.server as unknown as SecureServer, tlsFiles, logger, opts.tlsWatchIntervalMs) : () => {};
    const stopKeyWatch = signer.watch(
      config.coordinatorKeyFile,
      (err) => logger.error({ err, keyFile: config.coordinatorKeyFile }, 'coordinator key file change not applied: keeping the keys in use'),
      (k) => logger.info({ fingerprint: k.fingerprint, activeFrom: new Date(k.activeFrom).toISOString() }, 'coordinator key rotated: the new key signs from activeFrom on'),
      opts.keyWatchIntervalMs,
    );
    const replica = await startReplica(rt);
    logger.info(
      { port, host: config.host, db: store.dialect, nodes: counts.nodes, activeAttempts: counts.attempts, leasesExtended: extended, replica: rt.bus.replicaId, leads: replica.leads() },
      'coordinator listening',
    );

    let closing: Promise<void> | undefined;
    const close = () => {
      closing ??= (async () => {
        stopTlsWatch();
        stopKeyWatch();
        rt.work.close();
        rt.logs.close();
        await replica.stop();
        await app.close();
        if (ownsStore) await store.close();
        logger.info('coordinator stopped');
      })();
      return closing;
    };
    const signingKey = () => signer.current();
    return { url: config.publicUrl ?? urlFor(config.host, port, tls !== null), port, store, config, signingKey, bootstrapOperatorToken, close };
  } catch (err) {
    if (ownsStore) await store.close().catch(() => {});
    throw err;
  }
}

/** The part of an https.Server the reload needs. */
interface SecureServer {
  setSecureContext(options: SecureContextOptions): void;
}

/** New handshakes get a renewed pair; open connections keep theirs. A bad new pair is logged and the old one kept. */
function watchTlsReload(server: SecureServer, files: TlsFiles, logger: Logger, intervalMs: number | undefined): () => void {
  return watchTlsFiles(files, {
    ...(intervalMs !== undefined ? { intervalMs } : {}),
    apply: (pair) => {
      server.setSecureContext({ cert: pair.cert, key: pair.key });
      logger.info({ certFile: files.certFile }, 'TLS certificate reloaded');
    },
    onError: (err) => logger.error({ err, certFile: files.certFile, keyFile: files.keyFile }, 'TLS certificate change not applied: keeping the previous certificate'),
  });
}

/**
 * Child-process entry of a `bench:nodes` coordinator: reads NodesCoordinatorSettings as JSON from argv[2],
 * prints one JSON line { url, operatorToken } on stdout (operatorToken null when the database was not empty:
 * a second replica), and closes when stdin ends or on SIGTERM.
 */
import { loadCoordinatorConfig, startCoordinator } from '@gpux/coordinator';
import { serveUntilStdinEnds } from '../lib/child-server.js';

export interface NodesCoordinatorSettings {
  db: string;
  dataDir: string;
  heartbeatMs: number;
}

const s = JSON.parse(process.argv[2] ?? '{}') as NodesCoordinatorSettings;
// An empty environment, so the shell's GPUX_* never leak in. The production defaults, except the limits a
// fleet of tens of thousands of nodes enrolled by one account at once would hit: registrations per provider
// a minute (30), live nodes per provider (1,000) and failed authentications per address a minute (30; every
// simulated node shares 127.0.0.1). The market is off (a private cluster): no stake, no proof-of-hardware
// challenge riding on heartbeats, which simulated nodes would never answer.
const config = loadCoordinatorConfig(
  {},
  {
    db: s.db,
    dataDir: s.dataDir,
    port: 0,
    host: '127.0.0.1',
    logLevel: 'warn',
    market: false,
    heartbeatIntervalMs: s.heartbeatMs,
    registerRatePerMin: 1_000_000,
    maxNodesPerProvider: 10_000_000,
    authFailuresPerMinute: 1_000_000,
    metrics: 'open',
  },
);
const coordinator = await startCoordinator(config);
serveUntilStdinEnds({ url: coordinator.url, operatorToken: coordinator.bootstrapOperatorToken }, () => coordinator.close());

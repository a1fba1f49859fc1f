/**
 * Child-process entry of the benchmark's coordinator: reads BenchCoordinatorSettings as JSON from argv[2],
 * prints one JSON line { url, operatorToken } on stdout, and closes when stdin ends or on SIGTERM.
 */
import { serveUntilStdinEnds } from '../lib/child-server.js';
import { startBenchCoordinator } from './bench-coordinator.js';

const coordinator = await startBenchCoordinator(JSON.parse(process.argv[2] ?? '{}'));
serveUntilStdinEnds({ url: coordinator.url, operatorToken: coordinator.bootstrapOperatorToken }, () => coordinator.close());

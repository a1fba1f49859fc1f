/**
 * Child-process entry of the benchmark's coordinator: reads BenchCoordinatorSettings as JSON from argv[2],
 * prints one JSON line { url, operatorToken } on stdout, and closes when stdin ends or on SIGTERM.
 */
import { startBenchCoordinator } from './bench-coordinator.js';

const coordinator = await startBenchCoordinator(JSON.parse(process.argv[2] ?? '{}'));
process.stdout.write(`${JSON.stringify({ url: coordinator.url, operatorToken: coordinator.bootstrapOperatorToken })}\n`);
let closing = false;
async function shutdown() {
  if (closing) return;
  closing = true;
  await coordinator.close();
  // A normal exit, so --cpu-prof writes its profile.
  process.exit(0);
}
process.stdin.on('end', shutdown);
process.stdin.on('close', shutdown);
process.stdin.resume();
process.on('SIGTERM', shutdown);

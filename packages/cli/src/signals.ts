/** Waiting for Ctrl-C / SIGTERM so long-running commands can stop their components cleanly. */

/** Resolves on the first SIGINT or SIGTERM; a second one forces the process out. */
export function waitForShutdown(onForce: () => void = () => process.exit(130)): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let received = false;
    const handler = (signal: NodeJS.Signals) => {
      if (received) return onForce();
      received = true;
      resolve(signal);
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
}

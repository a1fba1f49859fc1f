/** The `gpux` program: builds the commander tree and turns every outcome into an exit code. */
import { Command, CommanderError } from 'commander';
import { registerBlob } from './commands/blob.js';
import { registerCompletion } from './commands/completion.js';
import { registerCoordinator } from './commands/coordinator.js';
import { registerDev } from './commands/dev.js';
import { registerJob } from './commands/job.js';
import { registerRun } from './commands/run.js';
import { registerKeys } from './commands/keys.js';
import { registerMarket } from './commands/market.js';
import { registerOffers } from './commands/offers.js';
import { registerNode } from './commands/node.js';
import { registerPayout } from './commands/payout.js';
import { registerProvider } from './commands/provider.js';
import { registerRegion } from './commands/region.js';
import { registerToken } from './commands/token.js';
import { registerWallet } from './commands/wallet.js';
import { type Io, processIo } from './context.js';
import { EXIT_USAGE, reportError } from './errors.js';

export const VERSION = '0.1.0';

export function buildProgram(io: Io): Command {
  const program = new Command('gpux')
    .description('gpux: an open GPU compute network. Run `gpux dev` to start a local one.')
    .version(VERSION)
    .showHelpAfterError('(run with --help for usage)')
    .showSuggestionAfterError()
    // Settings set here are inherited by every subcommand created below.
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out.write(s), writeErr: (s) => io.err.write(s) })
    .option('--insecure', 'allow sending tokens over plain HTTP to a non-loopback coordinator (anyone on the path can read and reuse them; same as GPUX_INSECURE=1)')
    .option('--ca-file <path>', 'PEM CA bundle to trust for the coordinator\'s certificate instead of the system roots (a private CA; same as GPUX_CA_FILE)')
    // Global flags: read them once before any action, so commands need not thread them through their own flags.
    .hook('preAction', (_program, action) => {
      const globals = action.optsWithGlobals();
      if (globals.insecure === true) io.insecure = true;
      if (typeof globals.caFile === 'string') io.caFile = globals.caFile;
    });
  registerDev(program, io);
  registerCoordinator(program, io);
  registerNode(program, io);
  registerJob(program, io);
  registerRun(program, io);
  registerWallet(program, io);
  registerMarket(program, io);
  registerOffers(program, io);
  registerPayout(program, io);
  registerProvider(program, io);
  registerRegion(program, io);
  registerToken(program, io);
  registerBlob(program, io);
  registerKeys(program, io);
  registerCompletion(program, io); // last: it reads the tree the others built
  return program;
}

/** Run the CLI with `argv` (as in process.argv) and return the exit code; never throws. */
export async function main(argv: string[], io: Io = processIo()): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv);
    return io.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander already printed the message (or the help/version, which are not errors).
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      // `gpux job` with no subcommand prints help as an error (exit code 1 in commander): a usage error.
      if (err.code === 'commander.help') return err.exitCode === 0 ? 0 : EXIT_USAGE;
      if (err.code === 'commander.executeSubCommandAsync') return err.exitCode;
      return EXIT_USAGE;
    }
    return reportError(err, io);
  }
}

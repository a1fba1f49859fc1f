/** `gpux coordinator start` (run the service), `gpux coordinator token create` (via the API); `key` is coordinator-key.ts. */
import type { CoordinatorConfig } from '@gpux/coordinator';
import type { Command } from 'commander';
import { clientFor, connectionOptions, type Io, intArg, jsonOption } from '../context.js';
import { explainListenError, usageError } from '../errors.js';
import { toJson } from '../output.js';
import { waitForShutdown } from '../signals.js';
import { registerCoordinatorKey } from './coordinator-key.js';
import { parseExpiresIn } from './token.js';

interface StartFlags {
  db?: string;
  port?: number;
  host?: string;
  dataDir?: string;
  logLevel?: string;
}

export function registerCoordinator(program: Command, io: Io): void {
  const coordinator = program.command('coordinator').description('run a coordinator and administer it');

  coordinator
    .command('start')
    .description('run the coordinator until Ctrl-C or SIGTERM (options also read GPUX_DB, GPUX_PORT, GPUX_HOST, GPUX_DATA_DIR)')
    .option('--db <url>', 'sqlite:PATH (default sqlite:<data dir>/coordinator.db) or postgres://user:pass@host:port/db')
    .option('--port <n>', 'TCP port; 0 picks a free one (default 7070)', intArg('--port', 0, 65535))
    .option('--host <host>', 'interface to listen on (default 127.0.0.1)')
    .option('--data-dir <dir>', 'data directory (default $GPUX_HOME/coordinator)')
    .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent (default info)')
    .action(async (flags: StartFlags) => {
      const shutdown = waitForShutdown();
      // Loaded here, not at the top: the server's dependencies would slow every other command.
      const { loadCoordinatorConfig, startCoordinator } = await import('@gpux/coordinator');
      const config = loadCoordinatorConfig(io.env, {
        db: flags.db,
        port: flags.port,
        host: flags.host,
        dataDir: flags.dataDir,
        logLevel: flags.logLevel as CoordinatorConfig['logLevel'] | undefined,
      });
      const coord = await startCoordinator(config).catch((err: unknown) => {
        throw explainListenError(err, config.port);
      });
      io.out.write(`coordinator listening on ${coord.url} (database ${redactDb(config.db)})\n`);
      if (coord.bootstrapOperatorToken) {
        io.out.write(`operator token (shown once, keep it safe): ${coord.bootstrapOperatorToken}\n`);
        io.out.write(`  export GPUX_URL=${coord.url} GPUX_OPERATOR_TOKEN=${coord.bootstrapOperatorToken}\n`);
        io.out.write('  gpux coordinator token create --role buyer --name alice\n');
      }
      const signal = await shutdown;
      io.out.write(`${signal}: stopping the coordinator\n`);
      await coord.close();
    });

  registerCoordinatorKey(coordinator, io);

  const token = coordinator.command('token').description('bearer tokens');
  jsonOption(
    connectionOptions(
      token
        .command('create')
        .description('create a token for a new account (operator token)')
        .requiredOption('--role <role>', 'buyer or operator')
        .requiredOption('--name <name>', 'a name for the account, e.g. a person or team')
        .option('--expires-in <duration>', 'the token stops working after this long, e.g. 12h, 30d (default: never; same as gpux token create)', parseExpiresIn),
    ),
  ).action(async (flags: { role: string; name: string; expiresIn?: number; json?: boolean; coordinator?: string; token?: string }) => {
    if (flags.role !== 'buyer' && flags.role !== 'operator') throw usageError(`--role must be buyer or operator, got "${flags.role}"`);
    const client = clientFor(io, flags, 'operator');
    const res = await client.createToken({ role: flags.role, name: flags.name, ...(flags.expiresIn !== undefined ? { expiresInSeconds: flags.expiresIn } : {}) });
    if (flags.json) return void io.out.write(toJson(res));
    io.out.write(`created ${res.role} token ${res.id} for account ${res.accountId} (shown once):\n${res.token}\n`);
  });
}

/** Never echo a database password. */
export function redactDb(db: string): string {
  return db.replace(/^(postgres(?:ql)?:\/\/[^:/@]+:)[^@]*@/, '$1***@');
}

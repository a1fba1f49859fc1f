/**
 * `gpux coordinator key show` and `gpux coordinator key rotate` (issue 19): the coordinator's key chain, read and
 * extended offline in its key file (the running coordinator picks a rotation up by itself).
 */
import { type Command, InvalidArgumentError } from 'commander';
import { type Io, jsonOption } from '../context.js';
import { usageError } from '../errors.js';
import { outputOption, toJson, writeData } from '../output.js';

interface KeyFlags {
  dataDir?: string;
  keyFile?: string;
  json?: boolean;
}

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** "30m", "24h", "7d", "1w", or "0" (sign with it at once) → milliseconds. */
export function parseActivateIn(raw: string): number {
  const m = /^(\d+)\s*([mhdw]?)$/i.exec(raw.trim());
  if (!m || (m[2] === '' && m[1] !== '0')) throw new InvalidArgumentError(`--activate-in must be a duration like 30m, 24h or 7d (or 0 for now), got "${raw}"`);
  return Number(m[1]) * (UNITS[(m[2] || 'm').toLowerCase()] ?? 0);
}

function fileOptions(cmd: Command): Command {
  return cmd
    .option('--data-dir <dir>', 'the coordinator data directory (default $GPUX_DATA_DIR or $GPUX_HOME/coordinator)')
    .option('--key-file <path>', 'the key file (default $GPUX_COORDINATOR_KEY_FILE or <data dir>/coordinator-key.json)');
}

async function keyFileOf(io: Io, flags: KeyFlags): Promise<string> {
  if (flags.keyFile) return flags.keyFile;
  const { loadCoordinatorConfig } = await import('@gpux/coordinator');
  return loadCoordinatorConfig(io.env, flags.dataDir ? { dataDir: flags.dataDir } : {}).coordinatorKeyFile;
}

const when = (ms: number) => new Date(ms).toISOString();

export function registerCoordinatorKey(coordinator: Command, io: Io): void {
  const key = coordinator.command('key').description("the coordinator's signing key (agents pin it; back the file up with the database)");

  outputOption(fileOptions(key.command('show').description('print the key chain and the fingerprint agents pin'))).action(async (flags: KeyFlags) => {
    const { readKeyFile, keyChainView } = await import('@gpux/coordinator');
    const path = await keyFileOf(io, flags);
    const file = readKeyFile(path);
    if (!file) throw usageError(`no coordinator key file at ${path}: the coordinator makes it on first start (or pass --key-file / --data-dir)`);
    const view = keyChainView(file, Date.now());
    if (writeData(io, flags, { keyFile: path, ...view })) return;
    io.out.write(`key file ${path}\nsigning key ${view.signingKey}\n`);
    for (const k of view.keys) {
      const by = k.endorsement ? `endorsed by ${k.endorsement.by.slice(0, 16)}…` : 'first key';
      io.out.write(`  ${k.fingerprint}  active from ${when(k.activeFrom)}  ${by}${k.fingerprint === view.signingKey ? '  (signing)' : ''}\n`);
    }
  });

  jsonOption(
    fileOptions(
      key
        .command('rotate')
        .description('add a new key endorsed by the newest one; it signs from --activate-in on (agents learn it before)')
        .option('--activate-in <duration>', 'when the new key starts to sign, e.g. 24h, 7d, or 0 for now (default 24h)', parseActivateIn),
    ),
  ).action(async (flags: KeyFlags & { activateIn?: number }) => {
    const { rotateKey, keyChainView, DEFAULT_ACTIVATION_DELAY_MS } = await import('@gpux/coordinator');
    const path = await keyFileOf(io, flags);
    const now = Date.now();
    const file = rotateKey(path, { activeFrom: now + (flags.activateIn ?? DEFAULT_ACTIVATION_DELAY_MS) });
    const view = keyChainView(file, now);
    const added = view.keys[view.keys.length - 1];
    if (flags.json) return void io.out.write(toJson({ keyFile: path, added, ...view }));
    if (added) io.out.write(`added key ${added.fingerprint}, signing from ${when(added.activeFrom)}; running coordinators pick it up within seconds\n`);
  });
}

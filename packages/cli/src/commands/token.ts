/**
 * `gpux token list|create|revoke` (bearer tokens, issue 10 item 14) and `gpux enrollment create|list|revoke`
 * (node enrollment tokens, item 2). A buyer lists and revokes its own account's; operators anyone's
 * (`--all`, `--account`, `--operator` pick the operator credentials of the profile).
 */
import type { EnrollmentView, TokenView } from '@gpux/protocol';
import { type Command, InvalidArgumentError } from 'commander';
import { clientFor, connectionOptions, type Io, intArg, jsonOption } from '../context.js';
import { usageError } from '../errors.js';
import { type Column, formatTable, formatTime, outputOption, render, toJson } from '../output.js';

interface Flags {
  json?: boolean;
  coordinator?: string;
  token?: string;
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** "90s", "15m", "12h", "30d", "2w" or plain seconds → seconds. */
export function parseExpiresIn(raw: string): number {
  const m = /^(\d+)\s*([smhdw]?)$/i.exec(raw.trim());
  if (!m) throw new InvalidArgumentError(`--expires-in must be a duration like 90m, 12h, 30d or 2w, got "${raw}"`);
  const seconds = Number(m[1]) * (UNITS[(m[2] || 's').toLowerCase()] ?? 1);
  if (seconds < 60) throw new InvalidArgumentError(`--expires-in must be at least 1 minute, got "${raw}"`);
  return seconds;
}

const state = (c: { revokedAt: number | null; expiresAt: number | null }, now: number): string =>
  c.revokedAt !== null ? 'revoked' : c.expiresAt !== null && c.expiresAt <= now ? 'expired' : 'active';

export function formatTokens(tokens: readonly TokenView[], now = Date.now()): string {
  if (tokens.length === 0) return 'no tokens\n';
  const columns: Column<TokenView>[] = [
    { header: 'ID', value: (t) => t.id },
    { header: 'ACCOUNT', value: (t) => t.accountId },
    { header: 'ROLE', value: (t) => t.role },
    { header: 'NAME', value: (t) => t.name },
    { header: 'STATE', value: (t) => state(t, now) },
    { header: 'CREATED', value: (t) => formatTime(t.createdAt) },
    { header: 'EXPIRES', value: (t) => formatTime(t.expiresAt) },
  ];
  return formatTable(tokens, columns);
}

export function formatEnrollments(enrollments: readonly EnrollmentView[], now = Date.now()): string {
  if (enrollments.length === 0) return 'no enrollments\n';
  const columns: Column<EnrollmentView>[] = [
    { header: 'ID', value: (e) => e.id },
    { header: 'ACCOUNT', value: (e) => e.accountId },
    { header: 'NAME', value: (e) => e.name },
    { header: 'STATE', value: (e) => state(e, now) },
    { header: 'NODES', value: (e) => (e.maxNodes === null ? String(e.nodes) : `${e.nodes}/${e.maxNodes}`), align: 'right' },
    { header: 'CREATED', value: (e) => formatTime(e.createdAt) },
    { header: 'EXPIRES', value: (e) => formatTime(e.expiresAt) },
  ];
  return formatTable(enrollments, columns);
}

export function registerToken(program: Command, io: Io): void {
  const token = program.command('token').description('bearer tokens: list, create (operator), revoke');

  outputOption(
    connectionOptions(
      token
        .command('list')
        .description("your account's tokens (never their secrets); --all or --account: every account's (operator token)")
        .option('--all', "every account's tokens (operator token)")
        .option('--account <id>', "only this account's tokens (operator token)")
        .option('--limit <n>', 'at most this many (1-1000)', intArg('--limit', 1, 1000), 100),
    ),
  ).action(async (flags: Flags & { all?: boolean; account?: string; limit: number }) => {
    const asOperator = Boolean(flags.all || flags.account);
    const res = await clientFor(io, flags, asOperator ? 'operator' : 'buyer').listTokens({ limit: flags.limit, ...(flags.account ? { accountId: flags.account } : {}) });
    render(io, flags, res, () => formatTokens(res.tokens));
  });

  jsonOption(
    connectionOptions(
      token
        .command('create')
        .description('create a token for a new account (operator token)')
        .requiredOption('--role <role>', 'buyer or operator')
        .requiredOption('--name <name>', 'a name for the account, e.g. a person or team')
        .option('--expires-in <duration>', 'the token stops working after this long, e.g. 12h, 30d (default: never)', parseExpiresIn),
    ),
  ).action(async (flags: Flags & { role: string; name: string; expiresIn?: number }) => {
    if (flags.role !== 'buyer' && flags.role !== 'operator') throw usageError(`--role must be buyer or operator, got "${flags.role}"`);
    const res = await clientFor(io, flags, 'operator').createToken({
      role: flags.role,
      name: flags.name,
      ...(flags.expiresIn !== undefined ? { expiresInSeconds: flags.expiresIn } : {}),
    });
    if (flags.json) return void io.out.write(toJson(res));
    const expiry = res.expiresAt ? `, expires ${formatTime(res.expiresAt)}` : '';
    io.out.write(`created ${res.role} token ${res.id} for account ${res.accountId}${expiry} (shown once):\n${res.token}\n`);
  });

  jsonOption(
    connectionOptions(
      token
        .command('revoke')
        .description('revoke a token by id: it is refused from its next request')
        .argument('<id>', 'token id (from gpux token list)')
        .option('--operator', "use the operator token (to revoke another account's token)"),
    ),
  ).action(async (id: string, flags: Flags & { operator?: boolean }) => {
    const res = await clientFor(io, flags, flags.operator ? 'operator' : 'buyer').revokeToken(id);
    io.out.write(flags.json ? toJson(res) : `token ${res.token.id} of account ${res.token.accountId} revoked at ${formatTime(res.token.revokedAt)}\n`);
  });

  const enrollment = program.command('enrollment').description('node enrollment tokens: they register nodes for your account and can do nothing else');

  jsonOption(
    connectionOptions(
      enrollment
        .command('create')
        .description('an enrollment token for your nodes (shown once): gpux node start --enrollment-token …')
        .requiredOption('--name <name>', 'what it is for, e.g. a rack or a site')
        .option('--expires-in <duration>', 'no new node registers with it after this long, e.g. 12h, 30d (default: never)', parseExpiresIn)
        .option('--max-nodes <n>', 'at most this many nodes register with it', intArg('--max-nodes', 1, 100_000))
        .option('--account <id>', "enroll nodes for this account (operator token)"),
    ),
  ).action(async (flags: Flags & { name: string; expiresIn?: number; maxNodes?: number; account?: string }) => {
    const res = await clientFor(io, flags, flags.account ? 'operator' : 'buyer').createEnrollment({
      name: flags.name,
      ...(flags.expiresIn !== undefined ? { expiresInSeconds: flags.expiresIn } : {}),
      ...(flags.maxNodes !== undefined ? { maxNodes: flags.maxNodes } : {}),
      ...(flags.account ? { accountId: flags.account } : {}),
    });
    if (flags.json) return void io.out.write(toJson(res));
    io.out.write(`created enrollment ${res.enrollment.id} for account ${res.enrollment.accountId} (shown once):\n${res.token}\n`);
    io.out.write(`start a node with: gpux node start --coordinator <url> --enrollment-token ${res.token}\n`);
  });

  outputOption(
    connectionOptions(
      enrollment
        .command('list')
        .description("your enrollments with their node counts; --all or --account: every account's (operator token)")
        .option('--all', "every account's enrollments (operator token)")
        .option('--account <id>', "only this account's (operator token)")
        .option('--limit <n>', 'at most this many (1-1000)', intArg('--limit', 1, 1000), 100),
    ),
  ).action(async (flags: Flags & { all?: boolean; account?: string; limit: number }) => {
    const asOperator = Boolean(flags.all || flags.account);
    const res = await clientFor(io, flags, asOperator ? 'operator' : 'buyer').listEnrollments({ limit: flags.limit, ...(flags.account ? { accountId: flags.account } : {}) });
    render(io, flags, res, () => formatEnrollments(res.enrollments));
  });

  jsonOption(
    connectionOptions(
      enrollment
        .command('revoke')
        .description('no new node registers with it; --remove-nodes also removes its nodes (their running jobs retry elsewhere)')
        .argument('<id>', 'enrollment id (from gpux enrollment list)')
        .option('--remove-nodes', 'remove the nodes that registered with it: they are refused from now on')
        .option('--operator', "use the operator token (another account's enrollment)"),
    ),
  ).action(async (id: string, flags: Flags & { removeNodes?: boolean; operator?: boolean }) => {
    const res = await clientFor(io, flags, flags.operator ? 'operator' : 'buyer').revokeEnrollment(id, { removeNodes: Boolean(flags.removeNodes) });
    if (flags.json) return void io.out.write(toJson(res));
    io.out.write(`enrollment ${res.enrollment.id} revoked at ${formatTime(res.enrollment.revokedAt)}\n`);
    if (res.removedNodes.length > 0) io.out.write(`removed ${res.removedNodes.length} node(s): ${res.removedNodes.join(', ')}; ${res.lostAttempts} running attempt(s) lost, their jobs retry elsewhere\n`);
    else if (res.enrollment.nodes > 0) io.out.write(`its ${res.enrollment.nodes} node(s) keep working; revoke with --remove-nodes to remove them\n`);
  });
}

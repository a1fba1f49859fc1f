/**
 * `gpux provider status` (issue 16): a provider's side in one screen, from GET /v1/provider/status: its nodes
 * (online or not, proven class, GPUs, stake free and locked, pay), its asks, its earnings paid and held, and
 * what to do next when something keeps its nodes from earning.
 */
import type { ProviderNodeStatus, ProviderStatusResponse } from '@gpux/protocol';
import type { Command } from 'commander';
import { clientFor, connectionOptions, type Io } from '../context.js';
import { money } from '../money-format.js';
import { type Column, formatAge, formatKeyValues, formatTable, formatTime, type OutputFlags, outputOption, render } from '../output.js';
import { formatAsks, provenCell } from './node.js';

interface Flags extends OutputFlags {
  coordinator?: string;
  token?: string;
}

const gpuModels = (s: ProviderNodeStatus) => {
  const models = [...new Set(s.node.advertisement.gpus.map((g) => g.model))];
  return models.length ? models.join(', ') : 'cpu only';
};
const paidCell = (s: ProviderNodeStatus) => (s.paid.length ? s.paid.map((p) => money(p.amount, p.asset)).join(', ') : null);

function nodeColumns(now: number, wide: boolean): Column<ProviderNodeStatus>[] {
  return [
    { header: 'NODE', value: (s) => s.node.id },
    { header: 'STATUS', value: (s) => (s.node.adminState === 'active' ? s.node.status : `${s.node.status}, ${s.node.adminState}`) },
    { header: 'GPUS', value: (s) => `${s.node.gpusBusy}/${s.node.gpusTotal}`, align: 'right' },
    { header: 'MODEL', value: gpuModels },
    { header: 'PROVEN', value: (s) => provenCell(s.node) },
    { header: 'STAKE FREE', value: (s) => money(s.stake.free, s.stake.asset, false), align: 'right' },
    { header: 'LOCKED', value: (s) => money(s.stake.locked, s.stake.asset, false), align: 'right' },
    { header: 'PAID', value: paidCell, align: 'right' },
    { header: 'HEARTBEAT', value: (s) => formatAge(s.node.lastHeartbeatAt, now) },
    ...(wide
      ? [
          { header: 'UNBONDING', value: (s: ProviderNodeStatus) => money(s.stake.unbonding.reduce((sum, u) => sum + u.amount, 0), s.stake.asset, false), align: 'right' as const },
          { header: 'JOBS', value: (s: ProviderNodeStatus) => s.node.activeAttempts, align: 'right' as const },
          { header: 'REGION', value: (s: ProviderNodeStatus) => s.node.advertisement.region },
          { header: 'HOST', value: (s: ProviderNodeStatus) => s.node.advertisement.hostname },
        ]
      : []),
  ];
}

/** What keeps the provider's nodes from earning, each with the command that fixes it. */
export function providerHints(s: ProviderStatusResponse): string[] {
  if (s.nodes.length === 0) return ['no nodes yet: `gpux enrollment create --name NAME`, then `gpux node start --enrollment-token gpux_enroll_…` on the GPU machine'];
  const hints: string[] = [];
  for (const n of s.nodes) {
    if (n.node.status !== 'online') hints.push(`node ${n.node.id} is offline (last heartbeat ${formatTime(n.node.lastHeartbeatAt)}): start its agent again with \`gpux node start\``);
    else if (n.node.adminState !== 'active') hints.push(`node ${n.node.id} is ${n.node.adminState}${n.node.adminReason ? ` (${n.node.adminReason})` : ''}: an operator can \`gpux node uncordon\` it`);
    if (s.market && n.stake.free === 0) {
      hints.push(`node ${n.node.id} has no free stake, so it takes no market job: \`gpux node stake add ${n.node.id} AMOUNT\` (stake comes from your wallet: \`gpux wallet deposit AMOUNT\` first)`);
    }
    const p = n.node.proof;
    if (p && (p.state === 'failed' || p.reason)) hints.push(`node ${n.node.id} proof of hardware: ${p.state}${p.reason ? `: ${p.reason}` : ''} (it takes no market job until a challenge passes)`);
  }
  return hints;
}

export function formatProviderStatus(s: ProviderStatusResponse, now: number, wide = false): string {
  let out = formatKeyValues([['account', s.accountId], ['market', s.market ? 'on' : 'off (no stake, asks or pay on this coordinator)']]);
  out += `\nnodes (${s.nodes.length}${s.truncated ? ', more not shown' : ''}):\n`;
  out += s.nodes.length ? formatTable(s.nodes, nodeColumns(now, wide)) : 'none\n';
  if (s.market) {
    out += '\nasks (the least you earn per GPU-hour after the fee; a class without one is paid at least the index):\n';
    out += formatAsks(s.asks);
    out += '\nearnings:\n';
    out += formatTable(
      s.earnings.filter((e) => e.asset === 'usdc' || e.paid > 0 || e.held > 0 || e.available > 0),
      [
        { header: 'ASSET', value: (e) => e.asset.toUpperCase() },
        { header: 'PAID', value: (e) => money(e.paid, e.asset, false), align: 'right' },
        { header: 'HELD', value: (e) => money(e.held, e.asset, false), align: 'right' },
        { header: 'HELD JOBS', value: (e) => e.heldJobs, align: 'right' },
        { header: 'NEXT RELEASE BY', value: (e) => (e.nextWindowClosesAt === null ? null : formatTime(e.nextWindowClosesAt)) },
        { header: 'WALLET', value: (e) => money(e.available, e.asset, false), align: 'right' },
      ],
    );
    out += 'paid: reached your wallet; held: waits for each job\'s audit or dispute window (`gpux wallet withdraw AMOUNT --to …` pays out)\n';
  }
  const hints = providerHints(s);
  if (hints.length) out += `\n${hints.map((h) => `hint: ${h}`).join('\n')}\n`;
  return out;
}

export function registerProvider(program: Command, io: Io): void {
  const provider = program.command('provider').description('your side as a provider: nodes, stake, asks and earnings (your account token)');
  outputOption(connectionOptions(provider.command('status').description('your nodes (status, proven class, GPUs, stake free and locked, pay), your asks, your earnings paid and held'))).action(
    async (flags: Flags) => {
      const res = await clientFor(io, flags, 'buyer').providerStatus();
      render(io, flags, res, (wide) => formatProviderStatus(res, Date.now(), wide));
    },
  );
}

/**
 * Node stake, seen by the node's provider (or an operator): bond USDC from the provider's wallet, unbond
 * free stake (it returns after the unbonding delay). The capacity index learns each change at once.
 */
import { GpuxError, isGpuxError, newId, type StakeRecord } from '@gpux/core';
import type { StakeView } from '@gpux/protocol';
import type { Principal } from '../principal.js';
import type { Needs } from '../runtime.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type StakeDeps = Needs<'bus' | 'clock' | 'config' | 'index' | 'logger' | 'random' | 'signals' | 'store'>;

export function stakeView(s: StakeRecord): StakeView {
  return {
    nodeId: s.nodeId,
    providerId: s.providerId,
    asset: s.asset,
    staked: s.staked,
    locked: s.locked,
    free: Math.max(0, s.staked - s.locked),
    unbonding: s.unbonding.map((u) => ({ id: u.id, amount: u.amount, releaseAt: u.releaseAt })),
  };
}

/** A node's stake; someone else's node reads as missing, as jobs do. */
export async function nodeStake(rt: StakeDeps, p: Principal, nodeId: string): Promise<StakeView> {
  const s = await rt.store.getStake(nodeId);
  if (p.role !== 'operator' && s.providerId !== p.accountId) throw new GpuxError('NODE_NOT_FOUND', `no node ${nodeId} of yours`);
  return stakeView(s);
}

export async function addStake(rt: StakeDeps, p: Principal, nodeId: string, amount: number): Promise<StakeView> {
  const s = await rt.store.addStake({ nodeId, providerId: p.accountId, amount, now: rt.clock.now() }).catch((err: unknown) => {
    // Stake comes out of the wallet: a provider short of it has to deposit first (issue 16), so say how.
    if (!(isGpuxError(err) && err.code === 'INSUFFICIENT_FUNDS')) throw err;
    throw new GpuxError('INSUFFICIENT_FUNDS', `stake is paid from your wallet: ${err.message} — deposit first: gpux wallet deposit AMOUNT (a dev network mints test funds; on others the operator records your payment), then add the stake again`, { cause: err });
  });
  rt.index.setStake(nodeId, s.staked);
  rt.bus.publish({ t: 'node', node: nodeId });
  rt.logger.info({ nodeId, providerId: p.accountId, amount, staked: s.staked }, 'stake added');
  rt.signals.kick();
  return stakeView(s);
}

export async function unstake(rt: StakeDeps, p: Principal, nodeId: string, amount: number): Promise<StakeView> {
  const now = rt.clock.now();
  const s = await rt.store.unbondStake({ id: newId('unb', now, rt.random), nodeId, providerId: p.accountId, amount, releaseAt: now + rt.config.unbondDelayMs, now });
  rt.index.setStake(nodeId, s.staked);
  rt.bus.publish({ t: 'node', node: nodeId });
  rt.logger.info({ nodeId, providerId: p.accountId, amount, staked: s.staked }, 'stake unbonding');
  return stakeView(s);
}

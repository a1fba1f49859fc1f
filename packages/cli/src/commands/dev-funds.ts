/**
 * Test money for a dev network: the dev buyer and the dev provider get minted funds, and every node of the
 * provider is staked, so the sample job (and what the user submits next) is paid for like on a real network.
 */
import { stakeToLock } from '@gpux/core';
import type { GpuxClient } from '@gpux/sdk';

const USDC = 1_000_000;
export const DEV_BUYER_FUNDS = 1000 * USDC;
/** Enough stake per node for a one-hour job on 8 GPUs at 12.5 USDC per GPU-hour. */
export const DEV_STAKE_PER_NODE = stakeToLock(12_500_000, 8, 3600);

export async function fundDevNetwork(buyer: GpuxClient, provider: GpuxClient, nodeIds: readonly string[], signal?: AbortSignal): Promise<{ buyerFunds: number; stakePerNode: number }> {
  await buyer.deposit({ asset: 'usdc', amount: DEV_BUYER_FUNDS }, { ...(signal ? { signal } : {}) });
  if (nodeIds.length > 0) {
    await provider.deposit({ asset: 'usdc', amount: DEV_STAKE_PER_NODE * nodeIds.length }, { ...(signal ? { signal } : {}) });
    for (const id of nodeIds) await provider.addStake(id, DEV_STAKE_PER_NODE, { ...(signal ? { signal } : {}) });
  }
  return { buyerFunds: DEV_BUYER_FUNDS, stakePerNode: DEV_STAKE_PER_NODE };
}

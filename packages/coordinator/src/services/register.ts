/** Node registration: bind the node to its provider, put it in the capacity index with its asks. */
import { GpuxError } from '@gpux/core';
import type { NodeAdvertisement, RegisterResponse } from '@gpux/protocol';
import type { Runtime } from '../runtime.js';
import { hashToken } from '../tokens.js';
import { applyNodeAsks } from './market.js';

/** The account a provider token names; a token that is unknown is refused, so a typo never registers an unpaid node. */
async function providerOf(rt: Runtime, providerToken: string | undefined): Promise<string | undefined> {
  if (providerToken === undefined) return undefined;
  const t = await rt.store.findTokenByHash(hashToken(providerToken));
  if (!t) throw new GpuxError('UNAUTHORIZED', 'the provider token is unknown or revoked: create one with `gpux coordinator token create` and pass it as --provider-token');
  return t.accountId;
}

export async function register(rt: Runtime, nodeId: string, publicKey: string, advertisement: NodeAdvertisement, providerToken?: string): Promise<RegisterResponse> {
  const now = rt.clock.now();
  const providerId = await providerOf(rt, providerToken);
  const node = await rt.store.registerNode({ id: nodeId, publicKey, advertisement, now, ...(providerId ? { providerId } : {}) });
  rt.nodeKeys.remember(nodeId, publicKey);
  rt.index.upsertNode(node);
  applyNodeAsks(rt, node.id, node.providerId, node.advertisement.gpus);
  rt.offlineNodes.delete(nodeId);
  rt.logger.info({ nodeId, hostname: advertisement.hostname, gpus: advertisement.gpus.length }, 'node registered');
  rt.scheduling.kick();
  return { nodeId, heartbeatIntervalMs: rt.config.heartbeatIntervalMs, leaseTtlMs: rt.config.leaseTtlMs, serverTime: now };
}


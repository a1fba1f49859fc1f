/**
 * A node registered over HTTP the way an agent does (signed, with an enrollment token the operator creates), so a
 * real coordinator's capacity index has it; nothing runs behind it. For tests that need capacity on a coordinator,
 * not a working agent (a region's free GPUs, say).
 */
import { generateNodeKeyPair, nodeIdFromPublicKey, signRequest } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';

export interface RegisteredNode {
  nodeId: string;
}

/** Register a node with `gpus` NVIDIA GPUs of `model` (80 GB), named after `name`, on the coordinator at `url`; throws on any refusal. */
export async function registerGpuNode(url: string, operatorToken: string, name: string, gpus: number, model = 'NVIDIA H100 80GB HBM3'): Promise<RegisteredNode> {
  const enrollment = (await new GpuxClient({ url, token: operatorToken }).createEnrollment({ name: 'nodes' })).token;
  const keys = generateNodeKeyPair();
  const advertisement = {
    hostname: `${name}-gpu-box`,
    agentVersion: '0.0.0-test',
    os: 'linux',
    arch: 'x64',
    cpuCores: 32,
    memoryMb: 262_144,
    gpus: Array.from({ length: gpus }, (_, i) => ({ index: i, uuid: `GPU-${name}-${i}`, vendor: 'nvidia', model, vramMb: 81_920 })),
    docker: { available: false },
    executors: ['process'],
  };
  const body = JSON.stringify({ publicKey: keys.publicKey, enrollmentToken: enrollment, advertisement });
  const path = '/v1/agent/register';
  const nodeId = nodeIdFromPublicKey(keys.publicKey);
  const headers = signRequest({ method: 'POST', path, body, nodeId }, keys.privateKeyPem);
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body });
  if (res.status !== 200) throw new Error(`registering ${name}'s node: HTTP ${res.status} ${await res.text()}`);
  return { nodeId };
}

/**
 * The agent loop and the challenge (issue 12): a challenge in a heartbeat response is computed beside the loops
 * (heartbeats keep going), once however often the heartbeat repeats it, then digests, reveal and verdict.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { systemClock } from '@gpux/core';
import type { ChallengeAssignment, NodeAdvertisementInput } from '@gpux/protocol';
import type { CoordinatorClient } from '../src/coordinator-client.js';
import { CoordinatorTrust, CpuChallengeRunner, SimulatedExecutor, seededRandom, silentLogger } from '../src/index.js';
import { NodeAgent } from '../src/loop/node-agent.js';
import { assignment, CheckingCoordinator } from './challenge-helpers.js';
import { chainLink, coordinatorKey, registrationAnswer, sealChallenge, testKey } from './coordinator-seal.js';
import { tempDir } from './helpers.js';

const NODE = { nodeId: 'n-test', publicKey: 'node-public-key' };

const advertisement = { hostname: 'h', os: 'linux', arch: 'x64', cpuCores: 2, memoryMb: 4096, gpus: [], executors: ['simulated'], agentVersion: '0' } as unknown as NodeAdvertisementInput;

/** A coordinator that keeps offering the challenge in every heartbeat until the digests arrive. */
function fakeClient(a: ChallengeAssignment) {
  const coord = new CheckingCoordinator(a);
  let heartbeats = 0;
  let heartbeatsWhileComputing = 0;
  let digestCalls = 0;
  const client = {
    nodeId: NODE.nodeId,
    publicKey: NODE.publicKey,
    register: async () => registrationAnswer(NODE),
    heartbeat: async () => {
      heartbeats++;
      if (digestCalls === 0 && heartbeats > 1) heartbeatsWhileComputing++;
      return { cancel: [], heartbeatIntervalMs: 100, serverTime: Date.now(), ...(coord.digests ? {} : { challenge: a }) };
    },
    work: async (_wait: number, signal?: AbortSignal) => {
      await new Promise((r) => {
        const t = setTimeout(r, 200);
        signal?.addEventListener('abort', () => {
          clearTimeout(t);
          r(undefined);
        });
      });
      return { assignments: [] };
    },
    challengeDigests: async (id: string, body: Parameters<CheckingCoordinator['challengeDigests']>[1]) => {
      digestCalls++;
      return coord.challengeDigests(id, body);
    },
    challengeReveal: (id: string, body: Parameters<CheckingCoordinator['challengeReveal']>[1]) => coord.challengeReveal(id, body),
    identity: async () => ({ signingKey: testKey.keyId, keys: [chainLink(testKey, null)] }),
  };
  return { coord, client: client as unknown as CoordinatorClient, stats: () => ({ heartbeats, heartbeatsWhileComputing, digestCalls }) };
}

/** The node's trust, pinned to the test coordinator key by --coordinator-key. */
async function trustIn(t: { after(fn: () => unknown): void }, client: CoordinatorClient): Promise<CoordinatorTrust> {
  return CoordinatorTrust.open({
    dataDir: await tempDir(t),
    coordinatorUrl: 'http://fake',
    coordinatorKey: testKey.keyId,
    clock: systemClock,
    logger: silentLogger,
    fetchIdentity: () => client.identity(),
  });
}

/** An agent on the fake coordinator that computes challenges with the CPU runner. */
async function cpuAgent(t: { after(fn: () => unknown): void }, client: CoordinatorClient): Promise<NodeAgent> {
  return new NodeAgent({
    nodeId: NODE.nodeId,
    client,
    trust: await trustIn(t, client),
    executor: new SimulatedExecutor(),
    advertisement,
    clock: systemClock,
    random: seededRandom(1),
    logger: silentLogger,
    pollWaitMs: 200,
    gracefulTimeoutMs: 1000,
    challenge: new CpuChallengeRunner(),
  });
}

describe('agent loop: proof-of-hardware challenge', () => {
  test('runs the heartbeat’s challenge once, keeps heartbeating while computing, and gets a verdict', async (t) => {
    // Big enough to take a few heartbeat intervals on the worker (n = 256: ~60 ms a product here).
    const a = sealChallenge(assignment({ n: 256, products: 12, rowBlock: 16 }), NODE.nodeId);
    const { coord, client, stats } = fakeClient(a);
    const agent = await cpuAgent(t, client);
    await agent.registerFirst();
    agent.startLoops();
    try {
      const deadline = Date.now() + 60_000;
      while (!coord.verdict && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.equal(coord.verdict?.outcome, 'passed', coord.verdict?.reason ?? 'no verdict');
      assert.equal(stats().digestCalls, 1, 'one run however often the heartbeat repeats the challenge');
      assert.ok(stats().heartbeatsWhileComputing >= 2, `heartbeats went on while computing (${JSON.stringify(stats())})`);
    } finally {
      await agent.stop();
    }
  });
});

describe('agent loop: a challenge the coordinator did not seal', () => {
  for (const [what, seal] of [
    ['unsigned', (c: ChallengeAssignment) => ({ ...c, seal: undefined })],
    ['signed by another key', (c: ChallengeAssignment) => sealChallenge(c, NODE.nodeId, coordinatorKey())],
    ['altered after sealing (its seed)', (c: ChallengeAssignment) => ({ ...sealChallenge(c, NODE.nodeId), seed: '77'.repeat(32) })],
  ] as const) {
    test(`${what}: never computed`, async (t) => {
      const a = seal(assignment({ n: 32, products: 1, rowBlock: 4 }));
      const { client, stats } = fakeClient(a);
      const agent = await cpuAgent(t, client);
      await agent.registerFirst();
      agent.startLoops();
      try {
        const deadline = Date.now() + 10_000;
        while (stats().heartbeats < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        assert.ok(stats().heartbeats >= 5, 'heartbeats went on');
        assert.equal(stats().digestCalls, 0);
      } finally {
        await agent.stop();
      }
    });
  }
});

/**
 * The node's wait for an encrypted attempt's data key (issue 13) tells "not released yet" from "the attempt is
 * over" by the error code (KEY_NOT_RELEASED), never by the message: it keeps asking on the first, drops the
 * attempt on any other 404, and refuses on answers that say nothing about either.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom, systemClock } from '@gpux/core';
import { parseJobSpec } from '@gpux/protocol';
import { generateX25519KeyPair } from '@gpux/protocol/e2e';
import { CoordinatorApiError, type CoordinatorClient } from '../src/coordinator-client.js';
import { awaitDataKey, E2eRefusal } from '../src/e2e/attempt-keys.js';
import { silentLogger } from '../src/index.js';

const spec = parseJobSpec({ name: 'k', image: 'busybox:1.36', command: ['true'], resources: { gpu: { count: 0 }, cpuCores: 1, memoryGb: 1 }, timeoutSeconds: 60 });
const assignment = { attemptId: 'att-1', jobId: 'job-1', spec } as unknown as Parameters<typeof awaitDataKey>[0]['assignment'];

/** A client whose GET .../key throws each error in turn (then the last one forever); counts the asks. */
function answering(...errors: Error[]) {
  const asked = { n: 0 };
  const client = {
    attemptKey: async () => {
      const e = errors[Math.min(asked.n, errors.length - 1)] as Error;
      asked.n++;
      throw e;
    },
  } as unknown as CoordinatorClient;
  return { client, asked };
}

const wait = (client: CoordinatorClient) =>
  awaitDataKey({
    client,
    assignment,
    encryption: generateX25519KeyPair(),
    clock: systemClock,
    random: seededRandom(1),
    logger: silentLogger,
    signal: new AbortController().signal,
    minDelayMs: 1,
    maxDelayMs: 2,
  });

const notReleased = () => new CoordinatorApiError(404, 'KEY_NOT_RELEASED', 'GET /v1/agent/attempts/att-1/key: no data key released yet for attempt att-1');

test('KEY_NOT_RELEASED keeps the node asking; a later NOT_FOUND (the attempt ended) drops the attempt', async () => {
  const { client, asked } = answering(notReleased(), notReleased(), new CoordinatorApiError(404, 'NOT_FOUND', 'attempt att-1 is failed: its keys are no longer served'));
  assert.equal(await wait(client), null);
  assert.equal(asked.n, 3, 'asked again after each KEY_NOT_RELEASED, stopped at the NOT_FOUND');
});

test('a 404 NOT_FOUND is never taken for a wait, whatever its message says', async () => {
  const { client, asked } = answering(new CoordinatorApiError(404, 'NOT_FOUND', 'no data key released yet for attempt att-1'));
  assert.equal(await wait(client), null);
  assert.equal(asked.n, 1);
});

test('an answer that is neither (a 400) refuses the attempt', async () => {
  const { client } = answering(new CoordinatorApiError(400, 'REQUEST_INVALID', 'attempt att-1 is of a job that is not encrypted: it has no keys'));
  await assert.rejects(wait(client), E2eRefusal);
});

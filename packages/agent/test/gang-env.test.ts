import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JobSpec } from '@gpux/protocol';
import { withGangEnv } from '../src/loop/gang-env.js';

test('gang members get GPUX_RANK, GPUX_WORLD_SIZE, GPUX_PEERS and GPUX_MASTER_ADDR; the spec’s env wins', () => {
  const spec = JobSpec.parse({ name: 'g', image: 'i', command: ['x'], env: { GPUX_MASTER_ADDR: 'mine' } });
  assert.equal(withGangEnv(spec, undefined), spec);
  const out = withGangEnv(spec, {
    rank: 1,
    worldSize: 3,
    peers: [
      { rank: 2, nodeId: 'n2' },
      { rank: 0, nodeId: 'n0', address: 'host0' },
      { rank: 1, nodeId: 'n1', address: 'host1' },
    ],
  });
  assert.deepEqual(out.env, { GPUX_RANK: '1', GPUX_WORLD_SIZE: '3', GPUX_PEERS: 'host0,host1,n2', GPUX_MASTER_ADDR: 'mine' });
});

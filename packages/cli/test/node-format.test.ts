/** `gpux node list` and `gpux node get`: the reputation column and line (issue 11). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NodeView } from '@gpux/protocol';
import { formatNode, nodeColumns, reputationLine } from '../src/commands/node.js';
import { formatTable } from '../src/output.js';

const AT = 1_700_000_000_000;

function node(id: string, reputation: NodeView['reputation']): NodeView {
  return {
    id,
    status: 'online',
    adminState: 'active',
    adminReason: null,
    drained: false,
    simulated: false,
    advertisement: {
      hostname: `${id}.local`,
      agentVersion: '0.1.0',
      os: 'linux',
      arch: 'x64',
      cpuCores: 16,
      memoryMb: 65536,
      gpus: [],
      docker: { available: false, gpuRuntime: 'none' },
      executors: ['process'],
      labels: {},
    } as unknown as NodeView['advertisement'],
    gpusTotal: 0,
    gpusBusy: 0,
    activeAttempts: 0,
    providerId: null,
    enrollmentId: null,
    removedAt: null,
    registeredAt: AT,
    lastHeartbeatAt: AT,
    reputation,
  };
}

const known = node('node-known', { score: 0.8123, good: 3.2, bad: 0.04, auditsPassed: 3, asOf: AT });
const fresh = node('node-fresh', null);

test('node list: a REP column with two decimals, "-" for a node without outcomes', () => {
  const table = formatTable([known, fresh], nodeColumns(AT));
  const [head, first, second] = table.split('\n');
  assert.match(head ?? '', /\bREP\b/);
  assert.match(first ?? '', /node-known .* 0\.81 /);
  assert.match(second ?? '', /node-fresh .* - /);
});

test('node get: a reputation line with the score, weights and audit streak; new nodes say they are neutral', () => {
  assert.match(formatNode(known), /^reputation: +0\.81 \(good 3\.2, bad 0\.0, decayed to .+; 3 audits passed in a row\)$/m);
  assert.equal(reputationLine(fresh), 'none yet (new node: neutral 0.50 for the scheduler)');
  assert.match(reputationLine({ ...known, reputation: { score: 0.5, good: 1, bad: 1, auditsPassed: 1, asOf: AT } }), /1 audit passed in a row/);
});

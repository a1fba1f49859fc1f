/** How a replica handles the bus's messages (issue 14), without a database: what is parsed, what a follower passes on. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onClusterMessage } from '../src/cluster/follow.js';
import { parseMessage } from '../src/cluster/messages.js';
import type { Runtime } from '../src/runtime.js';

test('a follower never passes a kick on (two followers would bounce it forever); the leader kicks its scheduling', async () => {
  let kicks = 0;
  const rt = { scheduling: { kick: () => kicks++ } } as unknown as Runtime;
  await onClusterMessage(rt, { t: 'kick' }, false);
  assert.equal(kicks, 0);
  await onClusterMessage(rt, { t: 'kick' }, true);
  assert.equal(kicks, 1);
});

test('malformed or unknown messages are dropped; known ones keep only their fields', () => {
  assert.equal(parseMessage(null), null);
  assert.equal(parseMessage({ t: 'work' }), null);
  assert.equal(parseMessage({ t: 'work', node: 'x'.repeat(201) }), null);
  assert.equal(parseMessage({ t: 'drop-tables' }), null);
  assert.deepEqual(parseMessage({ t: 'ended', attempt: 'att-1', job: 'job-1', extra: 1 }), { t: 'ended', attempt: 'att-1', job: 'job-1' });
  assert.deepEqual(parseMessage({ t: 'prices', junk: true }), { t: 'prices' });
});

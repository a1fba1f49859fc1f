/** GPUX_URL, the CLI's name for the coordinator URL, is read by the agent too; GPUX_COORDINATOR_URL and --coordinator win over it (issue 16). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadAgentConfig } from '../src/config.js';

test('the agent takes its coordinator from --coordinator, else GPUX_COORDINATOR_URL, else GPUX_URL', () => {
  assert.equal(loadAgentConfig({ GPUX_URL: 'http://127.0.0.1:7070/' }).coordinatorUrl, 'http://127.0.0.1:7070');
  assert.deepEqual(loadAgentConfig({ GPUX_URL: 'https://a.example, https://b.example' }).coordinatorUrls, ['https://a.example', 'https://b.example']);
  assert.equal(loadAgentConfig({ GPUX_URL: 'http://127.0.0.1:1', GPUX_COORDINATOR_URL: 'http://127.0.0.1:2' }).coordinatorUrl, 'http://127.0.0.1:2');
  assert.equal(loadAgentConfig({ GPUX_URL: 'http://127.0.0.1:1' }, { coordinatorUrl: 'http://127.0.0.1:3' }).coordinatorUrl, 'http://127.0.0.1:3');
  assert.throws(() => loadAgentConfig({ GPUX_URL: '  ' }), /coordinator URL is required \(--coordinator, GPUX_COORDINATOR_URL or GPUX_URL\)/);
});

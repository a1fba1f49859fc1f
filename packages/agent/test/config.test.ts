import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type AgentConfig, loadAgentConfig } from '../src/index.js';

const problemsOf = (fn: () => unknown): string[] => {
  try {
    fn();
  } catch (e) {
    return ((e as { problems?: { path: string }[] }).problems ?? []).map((p) => p.path);
  }
  assert.fail('expected an error');
};

describe('loadAgentConfig', () => {
  test('defaults', () => {
    const c = loadAgentConfig({ GPUX_COORDINATOR_URL: 'http://127.0.0.1:8080/', HOME: '/home/ada' });
    assert.deepEqual(c, {
      coordinatorUrl: 'http://127.0.0.1:8080',
      dataDir: '/home/ada/.gpux/node',
      executor: 'process',
      allowUnsafeProcess: false,
      labels: {},
      logLevel: 'info',
      simulatedGpus: 1,
      pollWaitMs: 25000,
      gracefulTimeoutMs: 60000,
    } satisfies AgentConfig);
  });

  test('env, then overrides win', () => {
    const env = {
      GPUX_COORDINATOR_URL: 'https://coord.example',
      GPUX_HOME: '/srv/gpux',
      GPUX_NODE_EXECUTOR: 'simulated',
      GPUX_ALLOW_UNSAFE_PROCESS: 'true',
      GPUX_NODE_REGION: 'eu-west',
      GPUX_NODE_LABELS: 'rack=r1, tier=gold',
      GPUX_LOG_LEVEL: 'debug',
      GPUX_SIM_GPUS: '4',
    };
    const c = loadAgentConfig(env, { executor: 'process', name: 'gpu-box-7', labels: 'a=b' });
    assert.equal(c.coordinatorUrl, 'https://coord.example');
    assert.equal(c.dataDir, '/srv/gpux/node');
    assert.equal(c.executor, 'process');
    assert.equal(c.allowUnsafeProcess, true);
    assert.equal(c.region, 'eu-west');
    assert.deepEqual(c.labels, { a: 'b' });
    assert.equal(c.name, 'gpu-box-7');
    assert.equal(c.logLevel, 'debug');
    assert.equal(c.simulatedGpus, 4);
    assert.deepEqual(loadAgentConfig(env).labels, { rack: 'r1', tier: 'gold' });
  });

  test('missing or invalid coordinator URL', () => {
    assert.throws(() => loadAgentConfig({}), /coordinator URL is required/);
    assert.throws(() => loadAgentConfig({ GPUX_COORDINATOR_URL: 'not a url' }), /"not a url" is not a valid http\(s\) URL/);
    assert.throws(() => loadAgentConfig({}, { coordinatorUrl: 'ftp://x' }), /not a valid http/);
  });

  test('docker is reserved', () => {
    assert.throws(() => loadAgentConfig({}, { coordinatorUrl: 'http://c', executor: 'docker' }), /the docker executor is not available yet/);
  });

  test('every bad value is reported at once', () => {
    const paths = problemsOf(() =>
      loadAgentConfig({ GPUX_NODE_LABELS: 'ok=1,broken', GPUX_LOG_LEVEL: 'loud', GPUX_SIM_GPUS: '-1', GPUX_ALLOW_UNSAFE_PROCESS: 'maybe' }, { executor: 'kubernetes' }),
    );
    assert.deepEqual(paths.sort(), ['allowUnsafeProcess', 'coordinatorUrl', 'executor', 'labels', 'logLevel', 'simulatedGpus']);
  });
});

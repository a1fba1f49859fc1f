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
      executor: 'docker',
      allowUnsafeProcess: false,
      labels: {},
      logLevel: 'info',
      logFormat: 'auto',
      simulatedGpus: 1,
      allowNetwork: false,
      imageAllow: [],
      imageDeny: [],
      pidsLimit: 4096,
      maxOutputBytes: 1024 ** 3,
      maxLogBytes: 10 * 1024 ** 2,
      maxScratchBytes: 10 * 1024 ** 3,
      defaultCpus: 2,
      defaultMemoryGb: 4,
      dockerSocket: '/var/run/docker.sock',
      pollWaitMs: 25000,
      gracefulTimeoutMs: 60000,
      challengeRunner: 'auto',
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

  test('the enrollment token: GPUX_ENROLLMENT_TOKEN or the override; an account token or the old provider token option is refused', () => {
    const url = 'https://c:7070'; // plain http off loopback would refuse the token (transport-safety.test.ts)
    assert.equal(loadAgentConfig({ GPUX_COORDINATOR_URL: url, GPUX_ENROLLMENT_TOKEN: 'gpux_enroll_abc' }).enrollmentToken, 'gpux_enroll_abc');
    assert.equal(loadAgentConfig({ GPUX_ENROLLMENT_TOKEN: 'gpux_enroll_abc' }, { coordinatorUrl: url, enrollmentToken: 'gpux_enroll_def' }).enrollmentToken, 'gpux_enroll_def');
    assert.throws(() => loadAgentConfig({}, { coordinatorUrl: url, enrollmentToken: 'gpux_account' }), /enrollmentToken: must be a node enrollment token/);
    assert.throws(() => loadAgentConfig({ GPUX_PROVIDER_TOKEN: 'gpux_x' }, { coordinatorUrl: url }), /were replaced: create an enrollment token .*--enrollment-token/);
    assert.deepEqual(
      problemsOf(() => loadAgentConfig({}, { coordinatorUrl: url, providerToken: 'gpux_x' })),
      ['providerToken'],
    );
  });

  test('docker options: network, image lists, limits, socket', () => {
    const c = loadAgentConfig({
      GPUX_COORDINATOR_URL: 'http://c',
      GPUX_NODE_ALLOW_NETWORK: 'true',
      GPUX_NODE_IMAGE_ALLOW: 'docker.io/library/*, ghcr.io/org/*,,busybox:1.36',
      GPUX_NODE_IMAGE_DENY: 'docker.io/library/bad*',
      GPUX_NODE_PIDS_LIMIT: '512',
      GPUX_NODE_MAX_OUTPUT_BYTES: '1000',
      GPUX_NODE_MAX_LOG_BYTES: '2000',
      DOCKER_HOST: 'unix:///run/user/1000/docker.sock',
    });
    assert.equal(c.executor, 'docker');
    assert.equal(c.allowNetwork, true);
    assert.deepEqual(c.imageAllow, ['docker.io/library/*', 'ghcr.io/org/*', 'busybox:1.36']);
    assert.deepEqual(c.imageDeny, ['docker.io/library/bad*']);
    assert.deepEqual([c.pidsLimit, c.maxOutputBytes, c.maxLogBytes], [512, 1000, 2000]);
    const limits = loadAgentConfig({ GPUX_NODE_DEFAULT_CPUS: '0.5', GPUX_NODE_DEFAULT_MEMORY_GB: '16', GPUX_NODE_MAX_SCRATCH_BYTES: '5000' }, { coordinatorUrl: 'http://c' });
    assert.deepEqual([limits.defaultCpus, limits.defaultMemoryGb, limits.maxScratchBytes], [0.5, 16, 5000]);
    assert.deepEqual(loadAgentConfig({}, { coordinatorUrl: 'http://c', defaultCpus: 8, defaultMemoryGb: '1.5' }).defaultMemoryGb, 1.5);
    const badLimits = problemsOf(() => loadAgentConfig({ GPUX_NODE_DEFAULT_CPUS: '0', GPUX_NODE_DEFAULT_MEMORY_GB: 'lots', GPUX_NODE_MAX_SCRATCH_BYTES: '-1' }, { coordinatorUrl: 'http://c' }));
    assert.deepEqual(badLimits.sort(), ['defaultCpus', 'defaultMemoryGb', 'maxScratchBytes']);
    assert.equal(c.dockerSocket, '/run/user/1000/docker.sock');
    assert.equal(loadAgentConfig({ DOCKER_HOST: 'unix:///x.sock', GPUX_DOCKER_SOCKET: '/y.sock' }, { coordinatorUrl: 'http://c' }).dockerSocket, '/y.sock');
    assert.deepEqual(loadAgentConfig({}, { coordinatorUrl: 'http://c', imageAllow: ['a/*'], allowNetwork: false }).imageAllow, ['a/*']);
  });

  test('a remote DOCKER_HOST is refused for the docker executor only; bad patterns and limits are reported', () => {
    assert.throws(() => loadAgentConfig({ DOCKER_HOST: 'tcp://10.0.0.1:2375' }, { coordinatorUrl: 'http://c' }), /DOCKER_HOST=tcp:\/\/10\.0\.0\.1:2375 is not a unix:\/\/ socket/);
    assert.equal(loadAgentConfig({ DOCKER_HOST: 'tcp://10.0.0.1:2375' }, { coordinatorUrl: 'http://c', executor: 'process' }).executor, 'process');
    const paths = problemsOf(() => loadAgentConfig({ GPUX_NODE_IMAGE_ALLOW: 'ok/*,bad pattern', GPUX_NODE_PIDS_LIMIT: '3', GPUX_NODE_ALLOW_NETWORK: 'perhaps' }, { coordinatorUrl: 'http://c' }));
    assert.deepEqual(paths.sort(), ['allowNetwork', 'imageAllow', 'pidsLimit']);
  });

  test('coordinator identity and TLS: --coordinator-key, --ca-file, --coordinator-cert-sha256 (issue 19)', () => {
    const fp = 'AB'.repeat(32);
    const pin = Array.from({ length: 32 }, () => 'CD').join(':');
    const c = loadAgentConfig({ GPUX_COORDINATOR_URL: 'https://c', GPUX_COORDINATOR_KEY: fp, GPUX_CA_FILE: '/etc/gpux/ca.pem', GPUX_COORDINATOR_CERT_SHA256: `${pin}, ${'ef'.repeat(32)}` });
    assert.equal(c.coordinatorKey, 'ab'.repeat(32));
    assert.equal(c.caFile, '/etc/gpux/ca.pem');
    assert.deepEqual(c.coordinatorCertSha256, ['cd'.repeat(32), 'ef'.repeat(32)]);
    assert.equal(loadAgentConfig({ GPUX_COORDINATOR_KEY: fp }, { coordinatorUrl: 'https://c', coordinatorKey: 'ef'.repeat(32) }).coordinatorKey, 'ef'.repeat(32));
    assert.throws(() => loadAgentConfig({}, { coordinatorUrl: 'https://c', coordinatorKey: 'abc' }), /coordinatorKey: "abc" is not a key fingerprint: 64 hex characters/);
    assert.deepEqual(problemsOf(() => loadAgentConfig({}, { coordinatorUrl: 'https://c', coordinatorCertSha256: 'nope' })), ['coordinatorCertSha256']);
    assert.throws(() => loadAgentConfig({}, { coordinatorUrl: 'http://127.0.0.1:1', coordinatorCertSha256: 'ef'.repeat(32) }), /certificate pins need an https coordinator URL/);
  });

  test('every bad value is reported at once', () => {
    const paths = problemsOf(() =>
      loadAgentConfig({ GPUX_NODE_LABELS: 'ok=1,broken', GPUX_LOG_LEVEL: 'loud', GPUX_SIM_GPUS: '-1', GPUX_ALLOW_UNSAFE_PROCESS: 'maybe' }, { executor: 'kubernetes' }),
    );
    assert.deepEqual(paths.sort(), ['allowUnsafeProcess', 'coordinatorUrl', 'executor', 'labels', 'logLevel', 'simulatedGpus']);
  });
});

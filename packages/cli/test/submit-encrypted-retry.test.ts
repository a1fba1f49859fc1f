/**
 * `gpux job submit --encrypt` keeps the job's data key before it submits (issue 13): under the idempotency key,
 * renamed to the job id once the answer comes. A submit whose answers are all lost (the job was made, the client
 * never learnt its id) leaves the key; rerun with the same --idempotency-key, it finds the key and the encrypted
 * spec, submits that same spec and gets the same job, whose key `gpux job keys` then finds. Through main()
 * against a real in-process coordinator, behind a proxy that drops the submit's answers.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cryptoRandom, issueToken, loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { GpuxClient, loadJobDataKey } from '@gpux/sdk';
import { main } from '../src/main.js';
import { argv, captureIo } from './helpers.js';

/** Forwards everything to `target`, but answers no POST /v1/jobs: the job is made, its answer never arrives. */
function answerLosingProxy(target: string): Promise<{ url: string; server: Server; submits: () => number }> {
  let submits = 0;
  const server = createServer((req, res) => {
    const up = request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
      if (req.method === 'POST' && req.url === '/v1/jobs') {
        submits++;
        answer.resume();
        answer.on('end', () => req.socket.destroy());
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, submits: () => submits })));
}

describe('gpux job submit --encrypt: the data key is kept before the submit', () => {
  let coord: RunningCoordinator;
  let proxy: Awaited<ReturnType<typeof answerLosingProxy>>;
  let dir: string;
  let buyer: string;
  const home = () => join(dir, 'home');
  const run = async (url: string, ...args: string[]) => {
    const io = captureIo({ GPUX_HOME: home() });
    const code = await main(argv(...args, '--coordinator', url, '--token', buyer), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };
  const keyFiles = () => readdirSync(join(home(), 'e2e-jobs')).sort();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-cli-e2e-retry-'));
    const config = loadCoordinatorConfig({}, { dataDir: join(dir, 'coord'), host: '127.0.0.1', port: 0, logLevel: 'silent', market: false, verify: false, challenge: 'off' });
    coord = await startCoordinator(config);
    proxy = await answerLosingProxy(coord.url);
    buyer = (await issueToken(coord.store, { role: 'buyer', name: 'buyer' }, systemClock, cryptoRandom)).token;
    const io = captureIo({ GPUX_HOME: home() });
    assert.equal(await main(argv('keys', 'create'), io), 0, io.stderr());
    writeFileSync(join(dir, 'data.bin'), 'MARKER-secret-input\n');
    writeFileSync(join(dir, 'job.yaml'), `name: enc\nimage: busybox\ncommand: [cat]\nencrypted: true\ninputs:\n  - { path: data.bin, file: ./data.bin }\n`);
  });
  after(async () => {
    await new Promise((r) => proxy?.server.close(r));
    await coord?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a submit whose answers are lost keeps the key; the rerun with the printed idempotency key gets the same job and its key', async () => {
    const lost = await run(proxy.url, 'job', 'submit', join(dir, 'job.yaml'));
    assert.notEqual(lost.code, 0, 'no answer: the submit fails');
    assert.ok(proxy.submits() >= 2, 'the SDK retried the submit with its idempotency key');
    const key = /idempotency key (\S+) \(if this submit is cut short/.exec(lost.err)?.[1];
    assert.ok(key, `the generated idempotency key is printed first: ${lost.err}`);
    assert.match(lost.err, new RegExp(`retry with --idempotency-key ${key}`));
    const made = (await new GpuxClient({ url: coord.url, token: buyer }).listJobs({})).jobs;
    assert.equal(made.length, 1, 'the coordinator made the job');
    const jobId = made[0]?.id as string;
    assert.deepEqual(keyFiles(), [keyFiles()[0]], 'one pending key file');
    assert.match(keyFiles()[0] as string, /^submit-[0-9a-f]{64}\.json$/);

    const again = await run(coord.url, 'job', 'submit', join(dir, 'job.yaml'), '--idempotency-key', key as string, '--json');
    assert.equal(again.code, 0, again.err);
    const res = JSON.parse(again.out);
    assert.equal(res.created, false, 'the same encrypted spec again: the first job, not a second one');
    assert.equal(res.job.id, jobId);
    assert.deepEqual(keyFiles(), [`${jobId}.json`], 'the pending key was renamed to the job id');
    assert.equal((await loadJobDataKey(home(), jobId)).jobId, jobId);
    assert.equal((await new GpuxClient({ url: coord.url, token: buyer }).listJobs({})).jobs.length, 1);
  });

  test('a kept submission is not reused for another spec under the same key', async () => {
    const key = 'changed-spec-key';
    const lost = await run(proxy.url, 'job', 'submit', join(dir, 'job.yaml'), '--idempotency-key', key);
    assert.notEqual(lost.code, 0);
    writeFileSync(join(dir, 'job2.yaml'), `name: enc\nimage: busybox\ncommand: [cat, data.bin]\nencrypted: true\ninputs:\n  - { path: data.bin, file: ./data.bin }\n`);
    const other = await run(coord.url, 'job', 'submit', join(dir, 'job2.yaml'), '--idempotency-key', key);
    assert.notEqual(other.code, 0);
    assert.match(other.err, /was used on this machine for another spec/);
    const same = await run(coord.url, 'job', 'submit', join(dir, 'job.yaml'), '--idempotency-key', key, '--json');
    assert.equal(same.code, 0, same.err);
    const jobId = JSON.parse(same.out).job.id as string;
    assert.ok(existsSync(join(home(), 'e2e-jobs', `${jobId}.json`)));
    assert.equal(keyFiles().filter((f) => f.startsWith('submit-')).length, 0, 'no pending key left');
  });
});

/**
 * Docker for tests: is an engine reachable (checked synchronously, so it can decide a suite's skip), and a tiny
 * image built from the host's static busybox with no registry (`docker import` through the Engine API), cached by content.
 */
import { spawnSync } from 'node:child_process';
import { type BusyboxImage, connectDocker, defaultSocketPath, findStaticBusybox, importBusyboxImage } from '@gpux/agent';
import { requireComponent } from './components.js';

export const TEST_IMAGE = 'gpux-test/busybox:latest';

/** The applets the docker tests use (importBusyboxImage adds every applet `busybox --list` names). */
export const TEST_APPLETS = [
  'sh', 'echo', 'cat', 'sleep', 'ls', 'id', 'env', 'mkdir', 'head', 'dd', 'wc', 'sha256sum', 'ping', 'ip', 'wget', 'nslookup',
  'true', 'false', 'yes', 'touch', 'rm', 'od', 'seq', 'printf', 'grep', 'tr', 'tail',
];

/** The engine the tests use: DOCKER_HOST when it is a unix:// URL, else /var/run/docker.sock. */
export function dockerSocket(env: NodeJS.ProcessEnv = process.env): string {
  return defaultSocketPath(env);
}

export interface DockerAvailability {
  available: boolean;
  why: string;
  version?: string;
  socketPath: string;
}

/** Asks the engine for /_ping and /version in a child process (node:test decides skips synchronously). */
export function dockerAvailability(socketPath = dockerSocket()): DockerAvailability {
  if (process.env.DOCKER_HOST && !process.env.DOCKER_HOST.startsWith('unix://')) {
    return { available: false, why: `DOCKER_HOST=${process.env.DOCKER_HOST} is not a unix socket`, socketPath };
  }
  const script = `
    const http = require('node:http');
    const get = (path) => new Promise((ok, fail) => {
      const req = http.get({ socketPath: process.argv[1], path, headers: { host: 'docker' }, timeout: 5000 }, (res) => {
        let body = ''; res.on('data', (c) => (body += c)); res.on('end', () => (res.statusCode === 200 ? ok(body) : fail(new Error(path + ' answered HTTP ' + res.statusCode))));
      });
      req.on('timeout', () => req.destroy(new Error('no answer within 5 s'))); req.on('error', fail);
    });
    get('/_ping').then(() => get('/version')).then((v) => console.log(JSON.parse(v).Version), (e) => { console.error(e.message); process.exit(1); });`;
  const r = spawnSync(process.execPath, ['-e', script, socketPath], { encoding: 'utf8', timeout: 15_000 });
  if (r.status === 0) {
    const version = r.stdout.trim();
    return { available: true, why: `engine ${version} at ${socketPath}`, version, socketPath };
  }
  return { available: false, why: `no Docker engine answers at ${socketPath}: ${(r.stderr || r.error?.message || 'no answer').trim()}`, socketPath };
}

/** node:test options for a suite that runs real containers: needs the engine and a static busybox to build the test image. */
export function requireDocker(): { skip: string | false } {
  const engine = dockerAvailability();
  if (!engine.available) return requireComponent('Docker', false, engine.why);
  const busybox = findStaticBusybox();
  if ('problem' in busybox) return requireComponent('Docker', false, `the test image needs busybox-static: ${busybox.problem}`);
  return requireComponent('Docker', true, engine.why);
}

/**
 * The test image: /usr/bin/busybox, /bin/<applet> links, /etc/passwd with nobody (65534), /tmp. Imported once;
 * later calls find it by its content label and return at once.
 */
export function buildBusyboxImage(tag = TEST_IMAGE, socketPath = dockerSocket()): Promise<BusyboxImage> {
  return importBusyboxImage(connectDocker(socketPath), { tag, applets: TEST_APPLETS });
}

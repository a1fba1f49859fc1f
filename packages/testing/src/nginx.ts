/**
 * The shipped nginx config (deploy/nginx/gpux.conf) run by a test: rendered with the test's ports, certificate and
 * upstream servers, wrapped in a main config that keeps everything under one directory (no root needed), and run as
 * a child process. Used by the reverse-proxy test (one coordinator) and the load-balancer test (replicas).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const SHIPPED = new URL('../../../deploy/nginx/gpux.conf', import.meta.url);

/** Debian's nginx-light and the usual other places; undefined when nginx is not installed. */
export const NGINX_BIN = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx'].find((p) => existsSync(p));

/** Replace one literal of the shipped file; a config edit that drops it fails here, not silently. */
function swap(text: string, from: string, to: string): string {
  assert.ok(text.includes(from), `deploy/nginx/gpux.conf no longer contains ${JSON.stringify(from)}: update the test's rendering`);
  return text.split(from).join(to);
}

export interface NginxSite {
  httpsPort: number;
  httpPort: number;
  /** Coordinator ports on 127.0.0.1, one `server` line each in the upstream. */
  upstreams: number[];
  cert: string;
  key: string;
}

/** The shipped site file with the test's ports, certificate and upstreams; IPv6 listeners dropped (tests bind loopback). */
export function renderShippedSite(o: NginxSite): string {
  let s = readFileSync(SHIPPED, 'utf8');
  s = swap(s, 'listen 443 ssl http2;', `listen 127.0.0.1:${o.httpsPort} ssl http2;`);
  s = swap(s, 'listen 80;', `listen 127.0.0.1:${o.httpPort};`);
  s = s.replace(/^\s*listen \[::\]:\d+.*$/gm, '');
  s = swap(s, '/etc/letsencrypt/live/gpux.example.com/fullchain.pem', o.cert);
  s = swap(s, '/etc/letsencrypt/live/gpux.example.com/privkey.pem', o.key);
  return swap(s, 'server 127.0.0.1:7070;', o.upstreams.map((p) => `server 127.0.0.1:${p};`).join('\n    '));
}

/** A main config around the site file, everything under `dir`, so nginx needs no root and touches nothing else. */
function mainConfig(dir: string): string {
  const tmp = (n: string) => `${n}_temp_path ${join(dir, 'tmp', n)};`;
  return [
    'worker_processes 1;',
    `pid ${join(dir, 'nginx.pid')};`,
    `error_log ${join(dir, 'error.log')} info;`,
    'events { worker_connections 256; }',
    'http {',
    `  access_log ${join(dir, 'access.log')};`,
    `  ${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(tmp).join('\n  ')}`,
    `  include ${join(dir, 'gpux.conf')};`,
    '}',
    '',
  ].join('\n');
}

export interface RunningNginx {
  readonly child: ChildProcess;
  /** What nginx printed, and its error log: for a failure message. */
  output(): string;
  /** Graceful stop (open requests finish). Safe twice. */
  stop(): Promise<void>;
}

/** Render the shipped site into `dir` and run nginx on it (call after NGINX_BIN was checked). */
export function startNginx(dir: string, site: NginxSite): RunningNginx {
  mkdirSync(join(dir, 'tmp'), { recursive: true });
  writeFileSync(join(dir, 'gpux.conf'), renderShippedSite(site));
  writeFileSync(join(dir, 'nginx.conf'), mainConfig(dir));
  // -e: the error log before the config is read (else nginx tries /var/log/nginx); -p: relative paths under dir.
  const child = spawn(NGINX_BIN as string, ['-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const errorLog = () => (existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8').slice(-4000) : '(no error log)');
  return {
    child,
    output: () => `nginx ${child.exitCode === null ? 'running' : `exited (${child.exitCode})`}: ${out}\nerror log: ${errorLog()}`,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGQUIT');
      await exited;
    },
  };
}

/**
 * Network namespaces for tests at a real network distance (issue 15): each namespace reaches only the root end of
 * its own uplink, so two namespaces talk only through a link shaper listening there; a process runs inside with
 * `spawn`; teardown kills what runs inside and deletes namespaces and links; a dead run's leftovers are cleaned by
 * name. Needs root and iproute2: under GPUX_REQUIRE_ALL=1 their absence fails this file.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, describe, test } from 'node:test';
import { requireComponent } from '../src/components.js';
import { canMakeNetns, cleanLeftoverNetns, IP_BIN, makeNetns, type Netns, NETNS_WHY } from '../src/netns.js';
import { startTcpProxy } from '../src/tcp-proxy.js';

const ip = (...args: string[]) => execFileSync(IP_BIN, args, { encoding: 'utf8' });
const namespaces = () => ip('netns', 'list');

/** A node one-liner: an echo server on HOST:PORT that prints "listening". */
const ECHO = `require('net').createServer((s) => { s.on('error', () => {}); s.pipe(s); }).listen(+process.argv[2], process.argv[1], () => console.log('listening'))`;
/** A node one-liner: connect to HOST:PORT, send "ping", print {back, ms} or {error}. */
const PING = `const t = performance.now(); const s = require('net').connect(+process.argv[2], process.argv[1], () => s.write('ping'));
s.on('data', (d) => { console.log(JSON.stringify({ back: String(d), ms: performance.now() - t })); s.destroy(); });
s.on('error', (e) => console.log(JSON.stringify({ error: e.code })));
setTimeout(() => { console.log(JSON.stringify({ error: 'timeout' })); process.exit(0); }, 3000).unref();`;

function output(n: Netns, name: string, script: string, args: string[], until: (out: string) => boolean): Promise<string> {
  const child = n.spawn(name, process.execPath, ['-e', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (d) => {
      out += d;
      if (until(out)) resolve(out);
    });
    child.stderr?.on('data', (d) => {
      out += d;
    });
    child.on('exit', (code) => (until(out) ? resolve(out) : reject(new Error(`exited ${code}: ${out}`))));
  });
}

describe('network namespaces', requireComponent('network namespaces', canMakeNetns(), NETNS_WHY), () => {
  let n: Netns | undefined;
  after(() => n?.teardown());

  test('two namespaces reach each other only through a shaper on the root end of the uplink; teardown removes everything', async () => {
    n = makeNetns(['near', 'far']);
    const near = n.host('near');
    const far = n.host('far');
    assert.match(near.address, /^10\.77\.\d+\.2$/);
    assert.match(far.address, /^10\.77\.\d+\.6$/);
    assert.match(namespaces(), new RegExp(`^${far.ns}\\b`, 'm'));
    assert.match(n.execSync('far', IP_BIN, ['-o', '-4', 'addr', 'show', 'dev', 'uplink']), new RegExp(`inet ${far.address.replace(/\./g, '\\.')}/30`));

    const server = n.spawn('far', process.execPath, ['-e', ECHO, far.address, '9000'], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => server.stdout?.on('data', (d) => String(d).includes('listening') && resolve()));
    const ping = async (host: string, port: number) => JSON.parse(await output(n as Netns, 'near', PING, [host, String(port)], (o) => o.includes('}'))) as { back?: string; ms?: number; error?: string };

    // No route from one namespace to another: only to its own uplink's root end.
    assert.deepEqual(await ping(far.address, 9000), { error: 'ENETUNREACH' });
    const shaper = await startTcpProxy({ host: far.address, port: 9000 }, { host: near.gateway, shape: { delayMs: 30 } });
    try {
      const through = await ping(shaper.host, shaper.port);
      assert.equal(through.back, 'ping');
      assert.ok((through.ms ?? 0) >= 60, `round trip ${through.ms} ms through a 30 ms one-way link`);
      assert.equal(shaper.accepted(), 1);
    } finally {
      await shaper.close();
    }

    n.teardown();
    n.teardown(); // idempotent
    await new Promise<void>((resolve) => (server.exitCode !== null || server.signalCode !== null ? resolve() : server.once('exit', () => resolve())));
    assert.equal(server.signalCode, 'SIGKILL', 'what ran inside is killed');
    assert.doesNotMatch(namespaces(), new RegExp(`${near.ns}|${far.ns}`));
    assert.doesNotMatch(ip('-4', '-o', 'addr', 'show'), new RegExp(`inet ${near.gateway.replace(/\./g, '\\.')}/`), 'the uplinks are gone');
  });

  test('leftovers of a run whose process is gone are deleted by name; those of a live one stay', () => {
    // A pid that is not running: the highest one the kernel would hand out, if free, else search down.
    let dead = 4_194_303;
    for (;; dead--) {
      try {
        process.kill(dead, 0);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ESRCH') break;
      }
    }
    const deadNs = `gpuxt-${dead.toString(36)}ab-left`;
    const liveNs = `gpuxt-${process.pid.toString(36)}cd-mine`;
    const deadLink = `gxv${dead.toString(36)}ab0`;
    ip('netns', 'add', deadNs);
    ip('netns', 'add', liveNs);
    ip('link', 'add', deadLink, 'type', 'veth', 'peer', 'name', `gxn${dead.toString(36)}ab0`);
    try {
      cleanLeftoverNetns();
      assert.doesNotMatch(namespaces(), new RegExp(`^${deadNs}\\b`, 'm'));
      assert.match(namespaces(), new RegExp(`^${liveNs}\\b`, 'm'));
      assert.doesNotMatch(ip('-o', 'link', 'show'), new RegExp(`${deadLink}[@:]`));
    } finally {
      for (const args of [['netns', 'del', deadNs], ['netns', 'del', liveNs], ['link', 'del', deadLink]]) {
        try {
          ip(...args);
        } catch {
          // deleted by the cleanup
        }
      }
    }
  });
});

/**
 * Network namespaces for tests with real network distance (issue 15). Each namespace is a "host" with one uplink: a
 * veth pair whose other end stays in the root namespace, a /30 per namespace (root end .4i+1, namespace end .4i+2)
 * in a /24 of 10.77.0.0/16 picked per run. A namespace has no default route, so it reaches only the root end of its
 * own uplink: traffic between namespaces must go through something listening in the root namespace (the link
 * shaper, tcp-proxy.ts), never straight across. Needs root and iproute2 (`ip netns`, veth); `canMakeNetns()` says.
 *
 * Names carry the creating process's pid (`gpuxt-<tag>-…` namespaces, `gxv<tag><i>` links, tag = pid in base 36 +
 * 2 random hex): parallel test files never collide, and `cleanLeftoverNetns()` (run by every `makeNetns`) deletes
 * what runs that died without tearing down left behind. Teardown also runs on exit and on SIGINT/SIGTERM.
 */
import { type ChildProcess, execFileSync, type SpawnOptions, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';

/** What `requireComponent('network namespaces', canMakeNetns(), NETNS_WHY)` says when they cannot be made. */
export const NETNS_WHY = 'run as root with iproute2 (`ip netns add`, veth links); CI installs the Debian package iproute2';

const NS_PREFIX = 'gpuxt-';
const LINK_PREFIX = 'gxv';
const MAX_HOSTS = 36; // one base-36 digit in the link name (interface names are at most 15 characters)

export const IP_BIN = ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip'].find((p) => existsSync(p)) ?? 'ip';

function ip(...args: string[]): string {
  return execFileSync(IP_BIN, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function ipQuiet(...args: string[]): void {
  try {
    ip(...args);
  } catch {
    // already gone
  }
}

let probed: boolean | undefined;

/** Whether this process can make a namespace with a veth uplink (probed once, by making and deleting one). */
export function canMakeNetns(): boolean {
  if (probed !== undefined) return probed;
  probed = false;
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false;
  const tag = newTag();
  const ns = `${NS_PREFIX}${tag}-probe`;
  const link = `${LINK_PREFIX}${tag}p`;
  try {
    ip('netns', 'add', ns);
    ip('link', 'add', link, 'type', 'veth', 'peer', 'name', `gxn${tag}p`);
    ip('link', 'set', `gxn${tag}p`, 'netns', ns);
    probed = true;
  } catch {
    probed = false;
  } finally {
    ipQuiet('link', 'del', link);
    ipQuiet('netns', 'del', ns);
  }
  return probed;
}

function newTag(): string {
  return `${process.pid.toString(36)}${randomBytes(1).toString('hex')}`;
}

/** The pid a name's tag was made by (tag = pid in base 36 + 2 hex characters). */
function pidOfTag(tag: string): number {
  return Number.parseInt(tag.slice(0, -2), 36);
}

function alive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function killNamespacePids(ns: string): void {
  let pids: string[] = [];
  try {
    pids = ip('netns', 'pids', ns).split(/\s+/).filter(Boolean);
  } catch {
    return;
  }
  for (const p of pids) {
    try {
      process.kill(Number(p), 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Delete the namespaces and links of runs whose process is gone (a SIGKILLed test leaves them behind). */
export function cleanLeftoverNetns(): void {
  let namespaces: string[] = [];
  try {
    namespaces = ip('netns', 'list')
      .split('\n')
      .map((l) => l.split(' ')[0] ?? '');
  } catch {
    return;
  }
  for (const ns of namespaces) {
    const m = /^gpuxt-([0-9a-z]+)-/.exec(ns);
    if (!m?.[1] || alive(pidOfTag(m[1]))) continue;
    killNamespacePids(ns);
    ipQuiet('netns', 'del', ns);
  }
  let links: string[] = [];
  try {
    links = ip('-o', 'link', 'show').split('\n');
  } catch {
    return;
  }
  for (const line of links) {
    const m = /^\d+: (gxv([0-9a-z]+)[0-9a-z])[@:]/.exec(line);
    if (m?.[1] && m[2] && !alive(pidOfTag(m[2]))) ipQuiet('link', 'del', m[1]);
  }
}

export interface NetnsHost {
  /** The name the test gave it, e.g. "us-west". */
  name: string;
  /** The namespace's name (`ip netns exec <ns> …`). */
  ns: string;
  /** Its address on its uplink (what the root namespace reaches it at). */
  address: string;
  /** The root namespace's end of its uplink: the only address this namespace can reach outside itself. */
  gateway: string;
}

export interface Netns {
  hosts: NetnsHost[];
  host(name: string): NetnsHost;
  /**
   * Run `command args` inside the namespace of `name` (`ip netns exec`): the ChildProcess is the command itself
   * (ip execs it). It is SIGKILLed at teardown if still running.
   */
  spawn(name: string, command: string, args: string[], options?: SpawnOptions): ChildProcess;
  /** Run a short command inside the namespace and return its stdout (throws on a non-zero exit). */
  execSync(name: string, command: string, args: string[]): string;
  /** Kill what runs inside, delete the namespaces and links. Idempotent, synchronous (it also runs on exit). */
  teardown(): void;
}

const liveSets = new Set<Netns>();
let exitHooked = false;

function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  const all = () => {
    for (const n of [...liveSets]) n.teardown();
  };
  process.on('exit', all);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      all();
      process.kill(process.pid, sig); // the listener is gone: the default action (exit) follows
    });
  }
}

/** The third octet of a /24 in 10.77.0.0/16 that no interface here has an address in. */
function freeSubnet(): number {
  const used = new Set<number>();
  for (const m of ip('-4', '-o', 'addr', 'show').matchAll(/inet 10\.77\.(\d+)\./g)) used.add(Number(m[1]));
  const free = Array.from({ length: 254 }, (_, i) => i + 1).filter((n) => !used.has(n));
  const pick = free[Math.floor(Math.random() * free.length)];
  if (pick === undefined) throw new Error('netns: every 10.77.x.0/24 is in use');
  return pick;
}

/** Other interfaces with an address in 10.77.<subnet>.0/24 (a parallel run picked the same one at the same time). */
function subnetClash(subnet: number, ours: Set<string>): boolean {
  for (const line of ip('-4', '-o', 'addr', 'show').split('\n')) {
    const m = /^\d+: ([^\s@]+)\S*\s+inet 10\.77\.(\d+)\./.exec(line);
    if (m && Number(m[2]) === subnet && !ours.has(m[1] ?? '')) return true;
  }
  return false;
}

/** Make one namespace per name, each with its uplink (teardown() when done; it also runs on exit). Cleans dead runs' leftovers first. */
export function makeNetns(names: string[]): Netns {
  if (names.length === 0 || names.length > MAX_HOSTS) throw new Error(`netns: 1 to ${MAX_HOSTS} namespaces, got ${names.length}`);
  if (new Set(names).size !== names.length) throw new Error(`netns: names must differ: ${names.join(', ')}`);
  cleanLeftoverNetns();
  for (let attempt = 0; ; attempt++) {
    const set = build(names, newTag(), freeSubnet());
    if (set) return set;
    if (attempt >= 5) throw new Error('netns: no free 10.77.x.0/24 after 6 tries');
  }
}

function build(names: string[], tag: string, subnet: number): Netns | null {
  const children = new Set<ChildProcess>();
  const hosts: NetnsHost[] = names.map((name, i) => ({
    name,
    ns: `${NS_PREFIX}${tag}-${name.replace(/[^a-zA-Z0-9-]/g, '-').slice(0, 40)}`,
    address: `10.77.${subnet}.${4 * i + 2}`,
    gateway: `10.77.${subnet}.${4 * i + 1}`,
  }));
  const rootLinks = hosts.map((_, i) => `${LINK_PREFIX}${tag}${i.toString(36)}`);
  let done = false;
  const set: Netns = {
    hosts,
    host(name) {
      const h = hosts.find((x) => x.name === name);
      if (!h) throw new Error(`netns: no namespace named "${name}" (have ${names.join(', ')})`);
      return h;
    },
    spawn(name, command, args, options = {}) {
      const child = spawn(IP_BIN, ['netns', 'exec', set.host(name).ns, command, ...args], options);
      children.add(child);
      child.on('exit', () => children.delete(child));
      return child;
    },
    execSync(name, command, args) {
      return execFileSync(IP_BIN, ['netns', 'exec', set.host(name).ns, command, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    },
    teardown() {
      if (done) return;
      done = true;
      liveSets.delete(set);
      for (const c of children) c.kill('SIGKILL');
      for (const h of hosts) {
        killNamespacePids(h.ns); // grandchildren too: a namespace lives on while anything runs in it
        ipQuiet('netns', 'del', h.ns);
      }
      // Deleting a namespace deletes the veth in it and so its peer here; this is for a namespace never made.
      for (const l of rootLinks) ipQuiet('link', 'del', l);
    },
  };
  hookExit();
  liveSets.add(set);
  try {
    hosts.forEach((h, i) => {
      const root = rootLinks[i] as string;
      const inner = `gxn${tag}${i.toString(36)}`; // renamed "uplink" inside; deleting the root end deletes it too
      ip('netns', 'add', h.ns);
      ip('link', 'add', root, 'type', 'veth', 'peer', 'name', inner);
      ip('link', 'set', inner, 'netns', h.ns);
      ip('-n', h.ns, 'link', 'set', inner, 'name', 'uplink');
      ip('addr', 'add', `${h.gateway}/30`, 'dev', root);
      ip('-n', h.ns, 'addr', 'add', `${h.address}/30`, 'dev', 'uplink');
      ip('link', 'set', root, 'up');
      ip('-n', h.ns, 'link', 'set', 'uplink', 'up');
      ip('-n', h.ns, 'link', 'set', 'lo', 'up');
    });
    if (subnetClash(subnet, new Set(rootLinks))) {
      set.teardown();
      return null;
    }
  } catch (err) {
    set.teardown();
    throw err;
  }
  return set;
}

/**
 * A tiny image made on this machine from a statically linked busybox (Debian's busybox-static), imported into the
 * engine with no registry: for tests, CI and `gpux dev` where nothing can be pulled. Cached by a content label.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type Docker from 'dockerode';
import { parseImageRef } from './image-ref.js';
import { type TarEntry, tarArchive } from './tar.js';

export const BUSYBOX_PATHS = ['/bin/busybox', '/usr/bin/busybox'];
const CONTENT_LABEL = 'gpux.busybox-image';
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The applets every busybox image gets even if `busybox --list` says nothing. */
export const BASE_APPLETS = [
  'sh', 'echo', 'cat', 'sleep', 'ls', 'id', 'env', 'mkdir', 'head', 'tail', 'dd', 'wc', 'sha256sum', 'ping', 'ip', 'wget',
  'nslookup', 'true', 'false', 'yes', 'touch', 'rm', 'od', 'seq', 'printf', 'grep', 'tr', 'kill', 'ps', 'stat', 'test', 'chmod',
];

export type BusyboxLookup = { path: string; version: string } | { problem: string };

/** The first statically linked busybox found; a dynamic one would not run inside an image with no libc. */
export function findStaticBusybox(paths: string[] = BUSYBOX_PATHS): BusyboxLookup {
  const found = paths.filter((p) => existsSync(p));
  if (found.length === 0) return { problem: `no busybox at ${paths.join(' or ')} (install busybox-static)` };
  for (const p of found) {
    if (!isStaticElf(readFileSync(p))) continue;
    const out = spawnSync(p, [], { encoding: 'utf8', timeout: 5000 });
    const version = /BusyBox v[\w.-]+/.exec(`${out.stdout ?? ''}${out.stderr ?? ''}`)?.[0] ?? 'BusyBox';
    return { path: p, version };
  }
  return { problem: `${found.join(', ')} is dynamically linked, so it cannot run in an image without libc (install busybox-static)` };
}

/** An ELF executable with no PT_INTERP program header needs no dynamic loader. */
export function isStaticElf(buf: Buffer): boolean {
  if (buf.length < 64 || buf.readUInt32BE(0) !== 0x7f454c46) return false;
  const is64 = buf[4] === 2;
  const le = buf[5] === 1;
  const u16 = (o: number) => (le ? buf.readUInt16LE(o) : buf.readUInt16BE(o));
  const u32 = (o: number) => (le ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
  const phoff = is64 ? Number(le ? buf.readBigUInt64LE(32) : buf.readBigUInt64BE(32)) : u32(28);
  const phentsize = u16(is64 ? 54 : 42);
  const phnum = u16(is64 ? 56 : 44);
  for (let i = 0; i < phnum; i++) {
    const off = phoff + i * phentsize;
    if (off + 4 > buf.length) return false;
    if (u32(off) === 3) return false; // PT_INTERP
  }
  return true;
}

export interface BusyboxImageOptions {
  /** e.g. "gpux-test/busybox:latest". */
  tag: string;
  /** Default: the first static busybox of BUSYBOX_PATHS. */
  busyboxPath?: string;
  /** Applets linked in /bin besides BASE_APPLETS and what `busybox --list` names. */
  applets?: string[];
}

export interface BusyboxImage {
  tag: string;
  id: string;
  /** False when an image with the same content was already there under this tag. */
  imported: boolean;
  busybox: string;
  version: string;
}

export async function importBusyboxImage(docker: Docker, opts: BusyboxImageOptions): Promise<BusyboxImage> {
  const lookup = findStaticBusybox(opts.busyboxPath ? [opts.busyboxPath] : BUSYBOX_PATHS);
  if ('problem' in lookup) throw new Error(`cannot make a busybox image: ${lookup.problem}`);
  const binary = readFileSync(lookup.path);
  const applets = appletsOf(lookup.path, opts.applets ?? []);
  const key = createHash('sha256').update(binary).update(applets.join(',')).digest('hex').slice(0, 32);
  const existing = await docker
    .getImage(opts.tag)
    .inspect()
    .catch(() => null);
  if (existing?.Config?.Labels?.[CONTENT_LABEL] === key) return { tag: opts.tag, id: existing.Id, imported: false, busybox: lookup.path, version: lookup.version };

  const ref = parseImageRef(opts.tag, { defaultTag: false });
  const repo = opts.tag.slice(0, opts.tag.length - (ref.tag ? ref.tag.length + 1 : 0));
  const stream = (await docker.importImage(busyboxRootfs(binary, applets) as unknown as NodeJS.ReadableStream, {
    repo,
    tag: ref.tag ?? 'latest',
    changes: [`ENV PATH=${DEFAULT_PATH}`, `LABEL ${CONTENT_LABEL}=${key}`, `LABEL gpux.imported-from=${lookup.path}`, 'CMD ["sh"]'],
  } as Record<string, unknown>)) as NodeJS.ReadableStream;
  await drain(stream);
  const made = await docker.getImage(opts.tag).inspect();
  return { tag: opts.tag, id: made.Id, imported: true, busybox: lookup.path, version: lookup.version };
}

/** /usr/bin/busybox, /bin/<applet> symlinks, /etc/passwd with nobody (65534), /tmp. */
export function busyboxRootfs(binary: Buffer, applets: string[]): Buffer {
  const entries: TarEntry[] = [
    ...['bin', 'dev', 'etc', 'proc', 'sys', 'usr', 'usr/bin', 'var'].map((path) => ({ type: 'dir' as const, path })),
    { type: 'dir', path: 'root', mode: 0o700 },
    { type: 'dir', path: 'tmp', mode: 0o1777 },
    { type: 'file', path: 'usr/bin/busybox', data: binary, mode: 0o755 },
    { type: 'file', path: 'etc/passwd', data: Buffer.from('root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n') },
    { type: 'file', path: 'etc/group', data: Buffer.from('root:x:0:\nnogroup:x:65534:\n') },
    ...applets.map((a) => ({ type: 'symlink' as const, path: `bin/${a}`, target: '/usr/bin/busybox' })),
  ];
  return tarArchive(entries);
}

function appletsOf(busybox: string, extra: string[]): string[] {
  const listed = spawnSync(busybox, ['--list'], { encoding: 'utf8', timeout: 5000 }).stdout ?? '';
  const names = [...BASE_APPLETS, ...extra, ...listed.split('\n').map((s) => s.trim())];
  return [...new Set(names.filter((n) => /^[a-z0-9_.[-]+$/.test(n) && n !== 'busybox' && n !== '[' && n !== '[['))].sort();
}

function drain(stream: NodeJS.ReadableStream): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    stream.on('data', (c: Buffer) => {
      text += c.toString();
    });
    stream.on('error', reject);
    stream.on('end', () => {
      const error = /"error(?:Detail)?":\s*"([^"]*)"/.exec(text)?.[1];
      if (error) reject(new Error(`docker import failed: ${error}`));
      else resolve();
    });
  });
}

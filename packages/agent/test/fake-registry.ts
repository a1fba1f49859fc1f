/**
 * A tiny Docker registry (distribution API v2, read-only, plain HTTP on 127.0.0.1, which engines trust as insecure):
 * serves one image built here from the host's static busybox, so tests can pull with no internet.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { busyboxRootfs, findStaticBusybox, tarArchive } from '../src/index.js';

export interface FakeRegistry {
  /** "127.0.0.1:PORT" */
  host: string;
  /** sha256 of the manifest: pull `${host}/${name}@${manifestDigest}`. */
  manifestDigest: string;
  /** Blob requests served so far (to tell a pull from a cache hit). */
  blobRequests: number;
  close(): Promise<void>;
}

const MANIFEST_TYPE = 'application/vnd.docker.distribution.manifest.v2+json';
const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/**
 * Serves a fresh busybox image as `name:tag`: its one layer holds a random marker file, so the engine has never seen
 * it and really downloads it. Blobs trickle out in `chunk`-byte pieces every `delayMs` (progress to report).
 */
export async function startFakeRegistry(name: string, tag: string, pace = { chunk: 64 * 1024, delayMs: 40 }): Promise<FakeRegistry> {
  const busybox = findStaticBusybox();
  if ('problem' in busybox) throw new Error(busybox.problem);
  const rootfs = busyboxRootfs(readFileSync(busybox.path), ['sh', 'echo', 'cat']);
  const marker = tarArchive([{ type: 'file', path: 'etc/gpux-marker', data: randomBytes(16) }]);
  // One layer: the rootfs archive with the marker appended before its end blocks.
  const layer = Buffer.concat([rootfs.subarray(0, rootfs.length - 1024), marker]);
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: { Env: ['PATH=/usr/sbin:/usr/bin:/sbin:/bin'], Cmd: ['sh'] },
      rootfs: { type: 'layers', diff_ids: [sha(layer)] },
    }),
  );
  const gz = gzipSync(layer);
  const blobs = new Map<string, Buffer>([
    [sha(config), config],
    [sha(gz), gz],
  ]);
  const layers = [{ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: gz.length, digest: sha(gz) }];
  const body = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MANIFEST_TYPE,
      config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: config.length, digest: sha(config) },
      layers,
    }),
  );
  const manifestDigest = sha(body);

  const state = { blobRequests: 0 };
  const server: Server = createServer((req, res) => {
    const url = req.url ?? '';
    res.setHeader('Docker-Distribution-API-Version', 'registry/2.0');
    const m = /^\/v2\/(.+)\/(manifests|blobs)\/([^/]+)$/.exec(url);
    if (url === '/v2/' || url === '/v2') return void res.end('{}');
    if (!m || m[1] !== name) return notFound(res);
    const [, , kind, ref] = m;
    if (kind === 'manifests') {
      if (ref !== tag && ref !== manifestDigest) return notFound(res);
      res.writeHead(200, { 'Content-Type': MANIFEST_TYPE, 'Docker-Content-Digest': manifestDigest, 'Content-Length': body.length });
      return void res.end(req.method === 'HEAD' ? undefined : body);
    }
    const blob = blobs.get(ref ?? '');
    if (!blob) return notFound(res);
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Docker-Content-Digest': ref ?? '', 'Content-Length': blob.length });
    if (req.method === 'HEAD') return void res.end();
    state.blobRequests++;
    void trickle(res, blob, pace);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    host: `127.0.0.1:${port}`,
    manifestDigest,
    get blobRequests() {
      return state.blobRequests;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function notFound(res: import('node:http').ServerResponse): void {
  res.writeHead(404, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ errors: [{ code: 'MANIFEST_UNKNOWN', message: 'not found' }] }));
}

async function trickle(res: import('node:http').ServerResponse, data: Buffer, pace: { chunk: number; delayMs: number }): Promise<void> {
  for (let off = 0; off < data.length && !res.destroyed; off += pace.chunk) {
    res.write(data.subarray(off, off + pace.chunk));
    await new Promise((r) => setTimeout(r, pace.delayMs));
  }
  res.end();
}

/**
 * Serves the dashboard build (packages/dashboard/dist) at /: files with their content types, hashed assets
 * cached for a year, index.html for client routes (/nodes/ID…), and a short how-to-build page when no build exists.
 * The security headers (CSP, frame-ancestors, nosniff) come from security-headers.ts, for every response.
 */
import { createReadStream, existsSync, statSync } from 'node:fs';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Where `npm run build -w @gpux/dashboard` writes, found from this file's place in the workspace. */
export const DEFAULT_DASHBOARD_DIR = fileURLToPath(new URL('../../../dashboard/dist/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/** Paths the API and system routes own: an unknown one is a JSON 404, never the app's HTML. */
const API_PREFIXES = ['/v1', '/healthz', '/readyz', '/metrics'];

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>gpux coordinator</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5">
<h1>gpux coordinator</h1>
<p>The API is up at <code>/v1</code>, but the dashboard has not been built.</p>
<p>Build it from the repository root, then reload this page:</p>
<pre><code>npm run build -w @gpux/dashboard</code></pre>
<p>API reference: <a href="/v1/openapi.json">/v1/openapi.json</a></p>
</body></html>
`;

const NOT_BUILT_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export interface DashboardOptions {
  /** The built dashboard. Default: packages/dashboard/dist of this workspace. */
  dir?: string;
}

/** A file under root for this URL path, or undefined (missing, a directory, a dotfile, or outside root). */
function fileFor(root: string, urlPath: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0') || decoded.split('/').some((s) => s.startsWith('.'))) return undefined;
  const file = resolve(root, `.${decoded}`);
  if (!file.startsWith(root + sep)) return undefined;
  try {
    return statSync(file).isFile() ? file : undefined;
  } catch {
    return undefined;
  }
}

function sendFile(reply: FastifyReply, file: string, immutable: boolean): FastifyReply {
  const type = TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
  // Vite puts content-hashed names under assets/: they never change. index.html must be revalidated.
  reply.header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
  reply.header('x-content-type-options', 'nosniff');
  return reply.type(type).send(createReadStream(file));
}

export function mountDashboard(app: FastifyInstance, opts: DashboardOptions = {}): void {
  const root = resolve(opts.dir ?? DEFAULT_DASHBOARD_DIR);
  const serve = async (req: FastifyRequest, reply: FastifyReply) => {
    const path = req.url.split('?')[0] ?? '/';
    if (API_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`))) return reply.callNotFound();
    const index = join(root, 'index.html');
    if (!existsSync(index)) {
      // A static page with one inline style and no script: its own policy.
      return reply.code(path === '/' ? 200 : 404).header('cache-control', 'no-cache').header('content-security-policy', NOT_BUILT_CSP).type(TYPES['.html']!).send(NOT_BUILT);
    }
    const file = path === '/' ? undefined : fileFor(root, path);
    if (file) return sendFile(reply, file, path.startsWith('/assets/'));
    // A missing file (a name with an extension) is a 404; anything else is a client route of the app.
    if (extname(path) !== '') return reply.code(404).type(TYPES['.txt']!).send('not found\n');
    return sendFile(reply, index, false);
  };
  app.get('/', serve);
  app.get('/*', serve);
}

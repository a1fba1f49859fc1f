/**
 * Federation routes (issue 15): operators add, list and remove peer regions and read this region's summary. The
 * peer routes (the summary exchange, and jobs a peer forwards here: run, status, cancel) authenticate the calling
 * region by its coordinator key before the body is read, and answer signed over the request's nonce; so is a
 * refusal after that point (a peer may trust it: nothing was done), while an authentication failure is not. The one
 * exception is an output's bytes (GET /v1/federation/jobs/:id/blobs/:sha256): streamed unsigned (they may be
 * gigabytes), the home checks them against the signed status that listed them; its refusals are plain errors.
 */
import { type BlobBackend, GpuxError, isGpuxError, type PeerRecord } from '@gpux/core';
import {
  FEDERATION_HEADERS,
  MAX_FORWARD_BODY_BYTES,
  MAX_SUMMARY_BODY_BYTES,
  peerCanonicalAnswer,
  ROUTES,
} from '@gpux/protocol';
import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { authenticatePeer } from '../federation/peer-auth.js';
import { addPeer, listPeers, removePeer } from '../federation/peers.js';
import { acceptForwarded, cancelForwarded, forwardedOutput, forwardedStatus } from '../federation/remote-jobs.js';
import { regionSummary } from '../federation/summary.js';
import { openBlobBackend } from '../blobs/open-backend.js';
import type { Needs } from '../runtime.js';
import { parseRange } from '../services/blobs.js';
import { authLimitHooks } from './auth-limit.js';
import { errorBody, STATUS_OF } from './errors.js';
import { mountRoute, routeInputs } from './route-kit.js';
import { sendBlob } from './routes-blobs.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesFederationDeps = Needs<
  'book' | 'clock' | 'config' | 'index' | 'logger' | 'logs' | 'nodeKeys' | 'nonces' | 'offlineNodes' | 'random' | 'scheduling' | 'signals' | 'signer' | 'startedAt' | 'store' | 'work'
>;

type PeerRouteName = 'exchangeSummary' | 'forwardJob' | 'forwardedJob' | 'cancelForwardedJob';
type Def<N extends PeerRouteName> = (typeof ROUTES)[N];
type BodyOf<D> = D extends { body: infer B extends z.ZodType } ? z.output<B> : undefined;
type QueryOf<D> = D extends { query: infer Q extends z.ZodType } ? z.output<Q> : undefined;
type ResponseOf<D> = D extends { response: infer R extends z.ZodType } ? z.input<R> : never;

interface PeerCtx<N extends PeerRouteName> {
  peer: PeerRecord;
  /** The `:id` path parameter ('' on routes without one). */
  id: string;
  body: BodyOf<Def<N>>;
  query: QueryOf<Def<N>>;
}


/** The answer's exact bytes and the headers that sign them over the request's nonce (the one signed answer of every peer route). */
function signedAnswer(rt: RoutesFederationDeps, nonce: string, body: unknown): { text: string; key: string; signature: string } {
  const text = JSON.stringify(body);
  const signed = rt.signer.signBytes((keyId) => peerCanonicalAnswer(nonce, text, keyId));
  return { text, key: signed.key.publicKey, signature: signed.signature };
}

/** A route only peer regions call: signed request in, signed answer out (a refusal included). */
function mountPeerRoute<N extends PeerRouteName>(app: FastifyInstance, rt: RoutesFederationDeps, name: N, bodyLimit: number, handler: (ctx: PeerCtx<N>) => Promise<ResponseOf<Def<N>>>): void {
  const def = ROUTES[name] as Def<N> & { body?: z.ZodType; query?: z.ZodType };
  app.route({
    method: def.method,
    url: def.path,
    bodyLimit,
    ...authLimitHooks(rt),
    handler: async (req, reply) => {
      const peer = await authenticatePeer(rt, req);
      const nonce = req.headers[FEDERATION_HEADERS.nonce] as string;
      let status = 200;
      let answer: unknown;
      try {
        const { id, query, body } = routeInputs(def, req);
        answer = await handler({ peer, id, body, query } as PeerCtx<N>);
      } catch (err) {
        if (!isGpuxError(err) || STATUS_OF[err.code] >= 500) throw err;
        status = STATUS_OF[err.code];
        answer = errorBody(err);
      }
      const signed = signedAnswer(rt, nonce, answer);
      reply.code(status).header(FEDERATION_HEADERS.key, signed.key).header(FEDERATION_HEADERS.signature, signed.signature).type('application/json');
      return reply.send(signed.text);
    },
  });
}

/** Output byte streams one peer may have open here at once (like an account's blob transfers). */
function transferSlots(max: () => number) {
  const open = new Map<string, number>();
  return (peerId: string): (() => void) => {
    const n = open.get(peerId) ?? 0;
    if (n >= max()) throw new GpuxError('LIMIT_EXCEEDED', `region ${peerId} already reads ${n} output streams here, the most at once (GPUX_BLOB_TRANSFERS_PER_ACCOUNT): wait for one to finish`);
    open.set(peerId, n + 1);
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      const left = (open.get(peerId) ?? 1) - 1;
      if (left <= 0) open.delete(peerId);
      else open.set(peerId, left);
    };
  };
}

/** GET /v1/federation/jobs/:id/blobs/:sha256: peer-signed request, the bytes (or a Range of them) as the answer. */
function mountOutputBlobRoute(app: FastifyInstance, rt: RoutesFederationDeps): void {
  const def = ROUTES.forwardedJobBlob;
  // The blob store this region's outputs are in, opened on the first read (the blob routes open their own).
  let backend: Promise<BlobBackend> | undefined;
  const backendOf = () => {
    backend ??= openBlobBackend(rt.config.blobs);
    return backend;
  };
  app.addHook('onClose', async () => {
    if (backend) await (await backend).close();
  });
  const take = transferSlots(() => rt.config.blobs.transfersPerAccount);
  app.route({
    method: def.method,
    url: def.path,
    ...authLimitHooks(rt),
    handler: async (req, reply) => {
      const peer = await authenticatePeer(rt, req);
      const { id } = routeInputs({}, req);
      const sha256 = (req.params as { sha256?: string }).sha256 ?? '';
      const output = await forwardedOutput(rt, peer, id, sha256, backendOf);
      const rangeHeader = typeof req.headers.range === 'string' ? req.headers.range : undefined;
      const range = parseRange(rangeHeader, output.size);
      if (range === 'unsatisfiable') return sendBlob(reply, { unsatisfiable: true, size: output.size }, sha256, rangeHeader);
      const done = take(peer.id);
      try {
        const stream = await output.open(range ?? undefined);
        return sendBlob(reply, { status: range ? 206 : 200, size: output.size, range, stream, done }, sha256, rangeHeader);
      } catch (err) {
        done();
        throw err;
      }
    },
  });
}

export function mountFederationRoutes(app: FastifyInstance, rt: RoutesFederationDeps): void {
  mountRoute(app, rt, 'regionPeers', () => listPeers(rt));
  mountRoute(app, rt, 'addPeer', async ({ body, reply }) => {
    const peer = await addPeer(rt, body);
    reply.code(201);
    return { peer };
  });
  mountRoute(app, rt, 'removePeer', async ({ id }) => ({ peer: await removePeer(rt, id) }));
  mountRoute(app, rt, 'regionSummary', () => regionSummary(rt));

  // The peer's summary is recorded, and this region's answered.
  mountPeerRoute(app, rt, 'exchangeSummary', MAX_SUMMARY_BODY_BYTES, async ({ peer, body }) => {
    await rt.store.recordPeerSummary(peer.id, body.summary, rt.clock.now());
    return { summary: await regionSummary(rt) };
  });
  mountPeerRoute(app, rt, 'forwardJob', MAX_FORWARD_BODY_BYTES, ({ peer, body }) => acceptForwarded(rt, peer, body));
  mountPeerRoute(app, rt, 'forwardedJob', MAX_FORWARD_BODY_BYTES, ({ peer, id, query }) => forwardedStatus(rt, peer, id, query.logsAfter));
  mountPeerRoute(app, rt, 'cancelForwardedJob', MAX_FORWARD_BODY_BYTES, ({ peer, id }) => cancelForwarded(rt, peer, id));
  mountOutputBlobRoute(app, rt);
}

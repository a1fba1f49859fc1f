/**
 * Mount one ROUTES entry: authenticate (bearer or node signature), validate params, query and body with
 * the route's zod schemas (not Fastify's validator), call the handler, send its result.
 */
import { GpuxError } from '@gpux/core';
import { problemsFromZod, ROUTES, type RouteName, SPEC_PARSE_PARAMS } from '@gpux/protocol';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { Needs } from '../runtime.js';
import { authLimitHooks } from './auth-limit.js';
import { authenticateBearer, type Principal } from './bearer-auth.js';
import { authenticateNode } from './node-auth.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RouteKitDeps = Needs<'clock' | 'config' | 'nodeKeys' | 'nonces' | 'startedAt' | 'store'>;

type Routes = typeof ROUTES;
type QueryOf<D> = D extends { query: infer Q extends z.ZodType } ? z.output<Q> : undefined;
type BodyOf<D> = D extends { body: infer B extends z.ZodType } ? z.output<B> : undefined;
type AuthOf<D> = D extends { auth: 'node' } ? { nodeId: string } : D extends { auth: 'buyer' | 'operator' } ? { principal: Principal } : object;
type ResponseOf<D> = D extends { response: infer R extends z.ZodType } ? z.output<R> : never;

export type RouteCtx<N extends RouteName> = {
  req: FastifyRequest;
  reply: FastifyReply;
  /** The `:id` path parameter ('' on routes without one). */
  id: string;
  query: QueryOf<Routes[N]>;
  body: BodyOf<Routes[N]>;
} & AuthOf<Routes[N]>;

export interface RouteOptions {
  bodyLimit?: number;
  /** The body is `{ spec }`: problems inside the spec are SPEC_INVALID with paths relative to the spec. */
  specBody?: boolean;
}

const MAX_ID_LENGTH = 128;

function invalid(what: string, error: z.ZodError): GpuxError {
  const problems = problemsFromZod(error);
  return new GpuxError('REQUEST_INVALID', `invalid ${what}: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`, { problems });
}

/** The route's id, query and body, each checked against its schema (a 400 saying what was wrong, and where). */
export function routeInputs(def: { query?: z.ZodType; body?: z.ZodType }, req: FastifyRequest, opts: Pick<RouteOptions, 'specBody'> = {}): { id: string; query: unknown; body: unknown } {
  const id = (req.params as { id?: string }).id ?? '';
  if (id.length > MAX_ID_LENGTH) throw new GpuxError('REQUEST_INVALID', `ids are at most ${MAX_ID_LENGTH} characters`);
  let query: unknown;
  if (def.query) {
    const q = def.query.safeParse(req.query ?? {});
    if (!q.success) throw invalid('query', q.error);
    query = q.data;
  }
  let body: unknown;
  if (def.body) {
    // A spec's problems read as the CLI's do ("image is required", did-you-mean for unknown keys).
    const b = opts.specBody ? def.body.safeParse(req.body, SPEC_PARSE_PARAMS) : def.body.safeParse(req.body);
    if (!b.success) throw opts.specBody ? specInvalid(b.error) : invalid('request body', b.error);
    body = b.data;
  }
  return { id, query, body };
}

/** Every issue inside `spec` → SPEC_INVALID relative to the spec; anything else about the body → REQUEST_INVALID. */
function specInvalid(error: z.ZodError): GpuxError {
  if (!error.issues.every((i) => i.path[0] === 'spec')) return invalid('request body', error);
  const problems = error.issues.map((i) => ({ path: i.path.length > 1 ? i.path.slice(1).map(String).join('.') : '(root)', message: i.message }));
  return new GpuxError('SPEC_INVALID', `the job spec has ${problems.length} problem${problems.length === 1 ? '' : 's'}`, { problems });
}

export function mountRoute<N extends RouteName>(
  app: FastifyInstance,
  rt: RouteKitDeps,
  name: N,
  handler: (ctx: RouteCtx<N>) => Promise<ResponseOf<Routes[N]>>,
  opts: RouteOptions = {},
): void {
  const def = ROUTES[name] as Routes[N] & { query?: z.ZodType; body?: z.ZodType };
  app.route({
    method: def.method,
    url: def.path,
    ...(opts.bodyLimit ? { bodyLimit: opts.bodyLimit } : {}),
    // Failed authentications are limited per client address (issue 19).
    ...(def.auth === 'none' ? {} : authLimitHooks(rt)),
    handler: async (req, reply) => {
      const auth: Record<string, unknown> = {};
      if (def.auth === 'node') {
        const registerKey = name === 'register' ? { publicKey: (req.body as { publicKey?: unknown } | undefined)?.publicKey } : undefined;
        auth.nodeId = await authenticateNode({ clock: rt.clock, nonces: rt.nonces, keys: rt.nodeKeys, startedAt: rt.startedAt }, req, registerKey);
      } else if (def.auth === 'buyer' || def.auth === 'operator') {
        auth.principal = await authenticateBearer(rt.store, req, def.auth, rt.clock);
      }
      const { id, query, body } = routeInputs(def, req, opts);
      // Scope the request's log lines (errors included) to who called and what it is about.
      const scope: Record<string, string> = {};
      if (auth.nodeId) scope.nodeId = auth.nodeId as string;
      if (id) scope[def.path.includes('/attempts/') ? 'attemptId' : def.path.includes('/nodes/') ? 'nodeId' : 'jobId'] = id;
      if (Object.keys(scope).length) req.log = req.log.child(scope);
      const result = await handler({ req, reply, id, query, body, ...auth } as RouteCtx<N>);
      return reply.send(result);
    },
  });
}

/** The OpenAPI 3.1 document, generated from ROUTES and the protocol's zod schemas (zod 4 toJSONSchema). */
import { ErrorBody, HealthResponse, ROUTES, SIGNATURE_HEADERS, type RouteDef } from '@gpux/protocol';
import { z } from 'zod';

type JsonSchema = Record<string, unknown>;

function schema(s: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { io, unrepresentable: 'any' }) as JsonSchema;
  return rest;
}

const json = (s: JsonSchema) => ({ content: { 'application/json': { schema: s } } });

const ERROR_RESPONSE = { description: 'Error (see error.code)', ...json({ $ref: '#/components/schemas/ErrorBody' }) };

function queryParameters(q: z.ZodType): object[] {
  const s = schema(q, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(s.properties ?? {}).map(([name, p]) => ({
    name,
    in: 'query',
    required: s.required?.includes(name) ?? false,
    ...(typeof p.description === 'string' ? { description: p.description } : {}),
    schema: p,
  }));
}

function operation(name: string, r: RouteDef): object {
  const parameters: object[] = [];
  for (const m of r.path.matchAll(/:([A-Za-z]+)/g)) parameters.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } });
  if (r.query) parameters.push(...queryParameters(r.query));
  if (name === 'submitJob') {
    parameters.push({ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 }, description: 'Same key + same spec returns the first job' });
  }
  const ok = name === 'submitJob' || name === 'createToken' ? '201' : '200';
  const security = r.auth === 'node' ? [{ nodeSignature: [] }] : r.auth === 'none' ? [] : [{ bearer: [] }];
  return {
    operationId: name,
    summary: r.summary,
    tags: [r.auth === 'node' ? 'agent' : r.auth],
    security,
    ...(parameters.length ? { parameters } : {}),
    ...(r.body ? { requestBody: { required: true, ...json(schema(r.body, 'input')) } } : {}),
    responses: {
      [ok]: { description: 'OK', ...json(schema(r.response, 'output')) },
      ...(name === 'submitJob' ? { '200': { description: 'Idempotent replay: the job first created with this key', ...json(schema(r.response, 'output')) } } : {}),
      default: ERROR_RESPONSE,
    },
  };
}

export function buildOpenApi(serverUrl: string | null): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const [name, r] of Object.entries(ROUTES) as Array<[string, RouteDef]>) {
    const p = r.path.replace(/:([A-Za-z]+)/g, '{$1}');
    paths[p] ??= {};
    paths[p][r.method.toLowerCase()] = operation(name, r);
  }
  const health = (summary: string) => ({ get: { summary, tags: ['system'], security: [], responses: { '200': { description: 'OK', ...json(schema(HealthResponse, 'output')) }, '503': { description: 'Not ready', ...json(schema(HealthResponse, 'output')) } } } });
  paths['/healthz'] = health('The process is up');
  paths['/readyz'] = health('The store answers');
  paths['/metrics'] = { get: { summary: 'Prometheus metrics (an operator token or GPUX_METRICS_TOKEN; open only with GPUX_METRICS=open)', tags: ['system'], security: [{ bearer: [] }], responses: { '200': { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } }, '401': { description: 'No or unknown token' }, '403': { description: 'Not an operator token' } } } };
  return {
    openapi: '3.1.0',
    info: { title: 'gpux coordinator API', version: '1' },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    paths,
    components: {
      schemas: { ErrorBody: schema(ErrorBody, 'output') },
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'A gpux_… token (buyer or operator)' },
        nodeSignature: {
          type: 'apiKey',
          in: 'header',
          name: SIGNATURE_HEADERS.signature,
          description: `ed25519 signature by the node key over "gpux-v1\\nMETHOD\\npath?query\\nsha256(body)\\ntimestamp\\nnonce\\nnodeId", with headers ${Object.values(SIGNATURE_HEADERS).join(', ')}`,
        },
      },
    },
  };
}

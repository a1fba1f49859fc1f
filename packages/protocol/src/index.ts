/** @gpux/protocol: wire schemas (zod) and their types. The single source of truth for the API. No I/O. */
export * from './errors.js';
export * from './job-spec.js';
export * from './node.js';
export * from './job.js';
export * from './api.js';
export * from './access-api.js';
export * from './agent-api.js';
export * from './signing.js';
export * from './commitment.js';
export * from './routes.js';
export { parseJobSpec } from './parse-spec.js';
export * from './money.js';
export * from './market-api.js';
export * from './verification.js';
export * from './challenge.js';
export * from './transport-safety.js';
export * from './coordinator-identity.js';
export * from './blob-api.js';

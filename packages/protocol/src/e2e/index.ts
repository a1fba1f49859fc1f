/**
 * '@gpux/protocol/e2e': end-to-end encryption of job payloads (issue 13), Node only. Wire shapes are in
 * '@gpux/protocol' (e2e-api.ts); the README's "End-to-end encryption" section is the contract in words.
 */
export * from './keys.js';
export * from './wrap.js';
export * from './stream.js';
export * from './logs.js';

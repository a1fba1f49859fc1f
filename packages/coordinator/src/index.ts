/** @gpux/coordinator: the service (HTTP API, background loops, metrics) and its Store adapters. */
export { type AppDeps, buildApp } from './app.js';
export { type CoordinatorConfig, LOG_LEVELS, type LogLevel, loadCoordinatorConfig } from './config.js';
export { DEFAULT_ACTIVATION_DELAY_MS, KEY_FILE_NAME, keyChainView, loadOrCreateKeyFile, readKeyFile, rotateKey } from './identity/key-file.js';
export { Signer } from './identity/signer.js';
export { createLogger } from './logger.js';
export { cryptoRandom } from './random.js';
export type { CoordinatorDeps } from './runtime.js';
export { type RunningCoordinator, type StartOptions, startCoordinator } from './start.js';
export { hashToken, issueEnrollment, issueToken } from './tokens.js';
export * from './store/index.js';

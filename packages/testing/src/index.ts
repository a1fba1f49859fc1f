/** @gpux/testing: helpers for tests: throwaway PostgreSQL, the component rule, the Store conformance suite, temp dirs. */
export { requireAllComponents, requireComponent } from './components.js';
export { findPostgresBin, type PostgresServer, postgresAvailability, requirePostgres, startPostgres } from './postgres.js';
export { type OpenStore, runStoreConformance, type StoreUnderTest } from './store-conformance.js';
export { type TempDir, tempDir } from './temp-dir.js';
export { advertisement as sampleAdvertisement, spec as sampleJobSpec } from './conformance/fixtures.js';
export { buildBusyboxImage, type DockerAvailability, dockerAvailability, dockerSocket, requireDocker, TEST_APPLETS, TEST_IMAGE } from './docker.js';
export { queuedJobRecord } from './queued-job.js';

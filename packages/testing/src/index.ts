/** @gpux/testing: helpers for tests: throwaway PostgreSQL, the component rule, the Store conformance suite, temp dirs, throwaway certificates. */
export { requireAllComponents, requireComponent } from './components.js';
export { findPostgresBin, type PostgresServer, postgresAvailability, requirePostgres, startPostgres } from './postgres.js';
export { type OpenStore, runStoreConformance, type StoreUnderTest } from './store-conformance.js';
export { type TempDir, tempDir } from './temp-dir.js';
export { type CertPair, certFingerprint, makeTestCa, OPENSSL_WHY, opensslAvailable, type TestCa } from './certs.js';
export { advertisement as sampleAdvertisement, spec as sampleJobSpec } from './conformance/fixtures.js';
export { buildBusyboxImage, type DockerAvailability, dockerAvailability, dockerSocket, requireDocker, TEST_APPLETS, TEST_IMAGE } from './docker.js';
export { queuedJobRecord } from './queued-job.js';
export { type BlobBackendUnderTest, type OpenBlobBackend, pieces, runBlobBackendConformance, seededBytes, sha256 as sha256Of } from './conformance/blob-backend.js';
export { requireS3Emulator, type S3Emulator, s3EmulatorAvailable, startS3Emulator } from './s3-emulator.js';
export { freePort } from './free-port.js';
export { NGINX_BIN, type NginxSite, renderShippedSite, type RunningNginx, startNginx } from './nginx.js';
export { type Replicas, type ReplicaStatus, replicaStatus, startReplicas } from './replicas.js';
export { type CutMode, type LinkShape, startTcpProxy, type TcpProxy, type TcpProxyOptions } from './tcp-proxy.js';
export { type RegisteredNode, registerGpuNode } from './register-node.js';
export { waitFor } from './processes.js';
export { canMakeNetns, cleanLeftoverNetns, makeNetns, type Netns, type NetnsHost, NETNS_WHY } from './netns.js';
export { type CliResult, type LinkSpec, type Region, REGION_PORT, type RegionLink, type Regions, type RegionSpec, startRegions, type StartRegionsOptions } from './regions.js';

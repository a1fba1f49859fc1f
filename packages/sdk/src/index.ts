/** @gpux/sdk: a typed client of the gpux /v1 API for buyers and operators. Depends only on @gpux/protocol. */
export * from './client.js';
export * from './errors.js';
export * from './market.js';
export * from './access.js';
export * from './federation.js';
export * from './verify.js';
export {
  type BlobTransferOptions,
  blobsOf,
  type DownloadedJobOutputs,
  downloadJobOutputs,
  downloadOutputBlob,
  GpuxBlobs,
  hashFile,
  type UploadFileOptions,
} from './blobs.js';
export { buildPath, type CallOptions, type FetchLike, normalizeBaseUrl, parseCoordinatorUrls, type RouteResponse } from './transport.js';
export { FAILOVER_STATUSES } from './failover.js';
export {
  createBuyerKeys,
  downloadEncryptedOutputs,
  dropPendingSubmission,
  encryptInputFile,
  type JobDataKey,
  keyRequestProblem,
  loadBuyerKeys,
  loadJobDataKey,
  loadPendingSubmission,
  newDataKey,
  type PendingSubmission,
  type ReleaseReport,
  releaseKeys,
  saveJobDataKey,
  savePendingSubmission,
  serveKeys,
  settlePendingSubmission,
} from './e2e.js';
export { type DecryptedLogEntry, EncryptedLogReader } from './e2e-logs.js';

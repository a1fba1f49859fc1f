/** The docker executor: isolated containers on the local engine, with the checks and cleanup around them. */
export { BASE_APPLETS, BUSYBOX_PATHS, type BusyboxImage, type BusyboxImageOptions, type BusyboxLookup, busyboxRootfs, findStaticBusybox, importBusyboxImage, isStaticElf } from './busybox-image.js';
export { type ChooseOptions, chooseLocalExecutor, type ExecutorChoice } from './choose.js';
export { buildContainerConfig, CONTAINER_DIRS, type ContainerLimits, type ContainerPlan, containerEnv, containerLimits } from './container-config.js';
export { StreamDemuxer } from './demux.js';
export { checkQuotas, DiskQuotaWatcher, formatBytes, measureTree, type QuotaTree, type TreeUsage } from './disk-quota.js';
export { DockerExecutor, type DockerExecutorOptions } from './docker-executor.js';
export { checkEngine, connectDocker, defaultSocketPath, type EngineInfo, engineUnreachableMessage, type GpuSupportProbe, gpuSupportProblem } from './engine.js';
export { type AmdDeviceOptions, containerGpuEnv, type GpuHostConfig, gpuHostConfig } from './gpu-devices.js';
export { checkImage, checkResolvedImage, type ImagePolicy, type ImageVerdict, type ResolvedImageNames } from './image-policy.js';
export { type EnsureImageOptions, ensureImage, ImagePullError, type ResolvedImage } from './image-pull.js';
export { canonicalImageRef, type ImageRef, isDigestPinned, looksLikeImageId, parseImageRef } from './image-ref.js';
export { containerName, LABEL_ATTEMPT, LABEL_JOB, LABEL_MANAGED, LABEL_NODE, managedFilter, managedLabels } from './labels.js';
export { type PullEvent, PullProgress } from './pull-progress.js';
export { type ReconcileReport, reconcileNode } from './reconcile.js';
export { type TarEntry, tarArchive } from './tar.js';

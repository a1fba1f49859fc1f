/** For a local dev network: docker when an engine is reachable and the wanted image is there (or can be made locally), else process. */
import { checkEngine, connectDocker, defaultSocketPath } from './engine.js';
import { findStaticBusybox, importBusyboxImage } from './busybox-image.js';
import { parseImageRef } from './image-ref.js';

export interface ExecutorChoice {
  kind: 'docker' | 'process';
  /** One line: why this executor, e.g. "engine 20.10.24 reachable at /var/run/docker.sock". */
  reason: string;
  /** What was done to get there, e.g. an image imported from the host's busybox. */
  notes: string[];
}

export interface ChooseOptions {
  socketPath?: string;
  /** An image the dev network's sample job needs; never pulled (a dev machine may be offline). */
  image?: string;
  /** Where to look for a static busybox to import as `image` when it is a busybox image. */
  busyboxPaths?: string[];
  timeoutMs?: number;
}

export async function chooseLocalExecutor(opts: ChooseOptions = {}): Promise<ExecutorChoice> {
  const socketPath = opts.socketPath ?? defaultSocketPath();
  let engine: Awaited<ReturnType<typeof checkEngine>>;
  try {
    engine = await checkEngine(socketPath, opts.timeoutMs ?? 5000);
  } catch (e) {
    const why = ((e as Error).cause as Error | undefined)?.message ?? (e as Error).message;
    return { kind: 'process', reason: `no Docker engine reachable at ${socketPath}: ${why}; jobs run as host processes`, notes: [] };
  }
  const reason = `engine ${engine.version} reachable at ${socketPath}`;
  if (!opts.image) return { kind: 'docker', reason, notes: [] };

  const docker = connectDocker(socketPath);
  const present = await docker
    .getImage(opts.image)
    .inspect()
    .then(() => true)
    .catch(() => false);
  if (present) return { kind: 'docker', reason, notes: [] };
  const repo = parseImageRef(opts.image).repository;
  if (repo !== 'docker.io/library/busybox') {
    return { kind: 'process', reason: `the image ${opts.image} is not present in the Docker engine and is never pulled here; jobs run as host processes`, notes: [] };
  }
  const busybox = findStaticBusybox(opts.busyboxPaths);
  if ('problem' in busybox) {
    return { kind: 'process', reason: `the image ${opts.image} is not present in the Docker engine and cannot be made locally (${busybox.problem}); jobs run as host processes`, notes: [] };
  }
  try {
    const made = await importBusyboxImage(docker, { tag: opts.image, busyboxPath: busybox.path });
    return { kind: 'docker', reason, notes: [`image ${opts.image} was not present; imported it from ${made.busybox} (${made.version}), with no registry`] };
  } catch (e) {
    return { kind: 'process', reason: `importing ${opts.image} from ${busybox.path} failed (${(e as Error).message}); jobs run as host processes`, notes: [] };
  }
}

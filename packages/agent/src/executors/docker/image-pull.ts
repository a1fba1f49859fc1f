/** Makes the job's image present on the node (pulling it when missing, with progress in the job's log and events) and pins it to its id. */
import type { Clock, EventSink } from '@gpux/core';
import type Docker from 'dockerode';
import { type ImageRef, parseImageRef } from './image-ref.js';
import { type PullEvent, PullProgress } from './pull-progress.js';

export interface ResolvedImage {
  /** The image id (sha256:… of its config): what the container is created from. */
  id: string;
  /** Registry digests the engine knows for it (repo@sha256:…); none for an image that was never pushed or pulled. */
  repoDigests: string[];
  /** Every tag the engine has for the same id (repo:tag), checked against the node's image lists. */
  repoTags: string[];
  pulled: boolean;
}

export class ImagePullError extends Error {}

export interface EnsureImageOptions {
  /** Abandons the pull (the engine stops it when the client goes away). */
  signal?: AbortSignal;
  /** At most one progress line per this many ms. Default 2000. */
  progressIntervalMs?: number;
  /** Receives image.pull.* job events for a pull (none when the image is already present). */
  events?: EventSink;
}

export async function ensureImage(docker: Docker, image: string, say: (line: string) => void, clock: Clock, opts: EnsureImageOptions = {}): Promise<ResolvedImage> {
  const local = await inspectImage(docker, image);
  if (local) {
    say(`image: ${image} is present on this node (${describe(local)})`);
    return local;
  }
  const ref = parseImageRef(image);
  const started = clock.now();
  const emit: EventSink = opts.events ?? (() => {});
  say(`image: ${image} is not on this node; pulling ${ref.full}`);
  emit('image.pull.started', { image, ref: ref.full });
  const progress = new PullProgress(image, started, opts.progressIntervalMs, (stats) => emit('image.pull.progress', { image, ...stats }));
  try {
    const pulled = await pull(docker, image, ref, progress, say, clock, opts.signal);
    const seconds = Math.round((clock.now() - started) / 100) / 10;
    say(`image: pulled ${image} in ${seconds.toFixed(1)} s (${describe(pulled)})`);
    emit('image.pull.finished', { image, imageId: pulled.id, digests: pulled.repoDigests, seconds });
    return { ...pulled, pulled: true };
  } catch (e) {
    emit('image.pull.failed', { image, error: (e as Error).message, seconds: Math.round((clock.now() - started) / 100) / 10 });
    throw e;
  }
}

async function pull(docker: Docker, image: string, ref: ImageRef, progress: PullProgress, say: (line: string) => void, clock: Clock, signal?: AbortSignal): Promise<ResolvedImage> {
  let stream: NodeJS.ReadableStream;
  try {
    // fromImage + tag (or digest): a digest pull makes the engine check the content against it.
    stream = (await docker.createImage({ fromImage: ref.repository, tag: ref.digest ?? ref.tag ?? 'latest', abortSignal: signal })) as NodeJS.ReadableStream;
  } catch (e) {
    throw new ImagePullError(`pulling ${image} failed: ${engineMessage(e)}`);
  }
  await readEvents(stream, (ev) => {
    const error = PullProgress.errorOf(ev);
    if (error) throw new ImagePullError(`pulling ${image} failed: ${error}`);
    for (const line of progress.update(ev, clock.now())) say(line);
  }).catch((e: unknown) => {
    if (e instanceof ImagePullError) throw e;
    throw new ImagePullError(`pulling ${image} failed: ${engineMessage(e)}`);
  });
  const pulled = await inspectImage(docker, image);
  if (!pulled) throw new ImagePullError(`pulling ${image} finished, but the engine does not know the image`);
  return pulled;
}

async function inspectImage(docker: Docker, image: string): Promise<ResolvedImage | null> {
  try {
    const info = await docker.getImage(image).inspect();
    return { id: info.Id, repoDigests: info.RepoDigests ?? [], repoTags: info.RepoTags ?? [], pulled: false };
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode === 404) return null;
    throw e;
  }
}

function describe(img: ResolvedImage): string {
  return `id ${img.id}${img.repoDigests.length > 0 ? `, digest ${img.repoDigests.join(', ')}` : ''}`;
}

/** The engine streams one JSON object per line; `onEvent` may throw to end the pull. */
function readEvents(stream: NodeJS.ReadableStream, onEvent: (ev: PullEvent) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let settled = false;
    const finish = (e?: unknown) => {
      if (settled) return;
      settled = true;
      if (e === undefined) resolve();
      else {
        (stream as NodeJS.ReadableStream & { destroy?(): void }).destroy?.();
        reject(e);
      }
    };
    stream.on('data', (chunk: Buffer | string) => {
      buf += chunk.toString();
      let nl = buf.indexOf('\n');
      while (nl >= 0 && !settled) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        nl = buf.indexOf('\n');
        if (!line) continue;
        try {
          onEvent(JSON.parse(line) as PullEvent);
        } catch (e) {
          finish(e);
        }
      }
    });
    stream.on('error', finish);
    stream.on('end', () => finish());
    stream.on('close', () => finish());
  });
}

export function engineMessage(e: unknown): string {
  const err = e as { json?: { message?: string }; message?: string; reason?: string };
  return (err.json?.message ?? err.message ?? String(e)).trim();
}

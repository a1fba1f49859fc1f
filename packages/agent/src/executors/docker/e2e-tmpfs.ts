/**
 * Where a docker node puts the decrypted inputs of an encrypted job (issue 13): a dir on a tmpfs of the host (default
 * /dev/shm), bind-mounted read-only into the container, so the plaintext never reaches the node's disk (memory pages
 * could still be swapped out where the host has swap). Checked before anything is downloaded: it must be a tmpfs, and
 * hold the plaintext inputs with room to spare.
 */
import { statfs } from 'node:fs/promises';
import { isBlobInput, type JobSpec } from '@gpux/protocol';

/** statfs f_type of a tmpfs (Linux). */
const TMPFS_MAGIC = 0x01021994;
/** Room left on the tmpfs beside the inputs (other jobs, the host). */
const HEADROOM_BYTES = 64 * 1024 * 1024;

/** Bytes of the decrypted inputs of an encrypted spec (its inputs are all encrypted blobs). */
export function plaintextInputBytes(spec: JobSpec): number {
  return spec.inputs.reduce((n, f) => n + (isBlobInput(f) && f.encrypted ? f.encrypted.size : 0), 0);
}

/** Why `dir` cannot take `bytes` of decrypted inputs, or null when it can. */
export async function tmpfsRefusal(dir: string, bytes: number): Promise<string | null> {
  let st: Awaited<ReturnType<typeof statfs>>;
  try {
    st = await statfs(dir);
  } catch (e) {
    return `the tmpfs for decrypted inputs, ${dir}, cannot be used: ${(e as Error).message}`;
  }
  if (Number(st.type) !== TMPFS_MAGIC) return `${dir} is not a tmpfs, so this node keeps no decrypted inputs there (encrypted jobs need one; see the README's "End-to-end encryption")`;
  const free = Number(st.bavail) * Number(st.bsize);
  if (bytes + HEADROOM_BYTES > free) return `the encrypted job's inputs decrypt to ${bytes} bytes, more than the tmpfs ${dir} has free (${free} bytes, less ${HEADROOM_BYTES} kept free)`;
  return null;
}

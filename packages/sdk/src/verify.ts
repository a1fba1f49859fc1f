/**
 * Checking a job's result against the node's signed commitment (issue 11, TRUST.md layer 2). What this
 * proves: the node that holds the key behind the commitment signed exactly these outputs (and this exit
 * code, these inputs); a coordinator or a proxy cannot swap them unseen. It does not prove the outputs are
 * correct — only that they are what that node committed to.
 */
import {
  type JobResultResponse,
  nodeIdFromPublicKey,
  outputRootDigest,
  sha256Hex,
  verifyCommitment,
} from '@gpux/protocol';

export interface VerifyCheck {
  name: string;
  ok: boolean;
  detail: string;
}

export interface VerifyJobReport {
  jobId: string;
  attemptId: string;
  nodeId: string | null;
  /** True when every check passed. */
  verified: boolean;
  checks: VerifyCheck[];
  /** Output files whose bytes were not available (not inline, not in `files`): only their listed digests are covered. */
  unchecked: string[];
  /** The sentence to show: never "the result is correct". */
  summary: string;
}

/**
 * Verify a fetched result. `files` gives bytes by output path (e.g. read from the directory `gpux job
 * result --out` wrote); a path not there falls back to the inline content of the result.
 */
export function verifyJobResult(res: JobResultResponse, files: ReadonlyMap<string, Uint8Array> = new Map()): VerifyJobReport {
  const checks: VerifyCheck[] = [];
  const check = (name: string, ok: boolean, detail: string) => checks.push({ name, ok, detail });
  const c = res.commitment ?? null;
  const sig = res.commitmentSignature ?? null;
  const key = res.nodePublicKey ?? null;
  const unchecked: string[] = [];
  const base = { jobId: res.jobId, attemptId: res.attemptId, nodeId: res.nodeId ?? c?.nodeId ?? null };
  if (!c || !sig || !key) {
    check('commitment', false, 'the result carries no signed commitment (the attempt was ended by the coordinator, not by a node report)');
    return { ...base, verified: false, checks, unchecked, summary: `not verified: job ${res.jobId} has no signed result commitment` };
  }
  const keyNode = safe(() => nodeIdFromPublicKey(key));
  check('node key', keyNode === c.nodeId && (res.nodeId === undefined || res.nodeId === c.nodeId), `public key ${key} is node ${keyNode}; the commitment names ${c.nodeId}`);
  check('signature', verifyCommitment(c, sig, key), `ed25519 signature of node ${c.nodeId} over the canonical commitment`);
  check('job and attempt', c.jobId === res.jobId && c.attemptId === res.attemptId, `commitment for job ${c.jobId}, attempt ${c.attemptId}; result of job ${res.jobId}, attempt ${res.attemptId}`);
  check('exit code', c.exitCode === res.exitCode, `committed ${c.exitCode}, reported ${res.exitCode}`);
  let badFiles = 0;
  const recomputed = res.outputs.map((f) => {
    const bytes = files.get(f.path) ?? (f.content !== undefined ? Buffer.from(f.content, 'base64') : undefined);
    if (bytes === undefined) {
      unchecked.push(f.path);
      return { path: f.path, sha256: f.sha256 };
    }
    const sha256 = sha256Hex(bytes);
    if (sha256 !== f.sha256) badFiles++;
    return { path: f.path, sha256 };
  });
  const from = files.size > 0 ? 'the files given' : 'the inline contents';
  check('output files', badFiles === 0, badFiles === 0 ? `${res.outputs.length - unchecked.length} file(s) hashed from ${from} match their listed sha256` : `${badFiles} file(s) differ from their listed sha256`);
  const root = outputRootDigest(recomputed);
  check('output root digest', root === c.outputDigest, `recomputed ${root}; committed ${c.outputDigest}`);
  const verified = checks.every((k) => k.ok);
  const notChecked = unchecked.length > 0 ? ` (${unchecked.length} file(s) not available to hash: only their listed digests are covered)` : '';
  const summary = verified ? `verified: the outputs are what node ${c.nodeId} committed to${notChecked}` : `NOT verified: ${checks.filter((k) => !k.ok).map((k) => k.name).join(', ')} failed`;
  return { ...base, verified, checks, unchecked, summary };
}

function safe<T>(fn: () => T): T | null {
  try {
    return fn();
  } catch {
    return null;
  }
}

/** Docker image references, normalized the way the engine does ("busybox" → "docker.io/library/busybox:latest"). */

export interface ImageRef {
  /** e.g. "docker.io", "ghcr.io", "localhost:5000". */
  domain: string;
  /** domain + path, e.g. "docker.io/library/busybox". */
  repository: string;
  tag?: string;
  /** "sha256:…" when the reference is pinned to a digest. */
  digest?: string;
  /** repository[:tag][@digest]; ":latest" is implied only when there is neither tag nor digest. */
  full: string;
}

/**
 * The rules of the distribution/reference package: the first path component is a registry domain when it holds a
 * "." or ":" or is "localhost"; else the image lives on docker.io, under "library/" when it has a single component.
 * `defaultTag` false keeps an untagged reference untagged (for allow/deny patterns, which then match every tag).
 */
export function parseImageRef(ref: string, opts: { defaultTag?: boolean } = {}): ImageRef {
  let rest = ref.trim();
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  const slash = rest.indexOf('/');
  const first = slash < 0 ? '' : rest.slice(0, slash);
  let domain = 'docker.io';
  let path = rest;
  if (slash >= 0 && (/[.:]/.test(first) || first === 'localhost' || first !== first.toLowerCase())) {
    domain = first === 'index.docker.io' ? 'docker.io' : first;
    path = rest.slice(slash + 1);
  }
  if (domain === 'docker.io' && !path.includes('/')) path = `library/${path}`;
  if (tag === undefined && digest === undefined && opts.defaultTag !== false) tag = 'latest';
  const repository = `${domain}/${path}`;
  const full = `${repository}${tag !== undefined ? `:${tag}` : ''}${digest !== undefined ? `@${digest}` : ''}`;
  const out: ImageRef = { domain, repository, full };
  if (tag !== undefined) out.tag = tag;
  if (digest !== undefined) out.digest = digest;
  return out;
}

/** True when the reference names its content by digest (repo@sha256:…), so a registry cannot swap it. */
export function isDigestPinned(ref: string): boolean {
  return /@sha256:[0-9a-f]{64}$/.test(ref.trim());
}

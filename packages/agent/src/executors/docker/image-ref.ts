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

/** Other names of Docker Hub: a pull from them fetches the same images as from docker.io. */
const DOCKER_HUB_ALIASES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io', 'registry.hub.docker.com', 'hub.docker.com']);

/**
 * The reference as an allow/deny list compares it: parsed as above, the registry's Docker Hub aliases folded into
 * "docker.io" (so "registry-1.docker.io/library/busybox" is "docker.io/library/busybox") and domain and path in
 * lower case (the engine refuses upper-case paths; a domain is case-insensitive). Tags and digests keep their case.
 */
export function canonicalImageRef(ref: string, opts: { defaultTag?: boolean } = {}): ImageRef {
  const parsed = parseImageRef(ref, opts);
  let domain = parsed.domain.toLowerCase();
  let path = parsed.repository.slice(parsed.domain.length + 1).toLowerCase();
  if (DOCKER_HUB_ALIASES.has(domain)) {
    domain = 'docker.io';
    if (!path.includes('/')) path = `library/${path}`;
  }
  const repository = `${domain}/${path}`;
  const full = `${repository}${parsed.tag !== undefined ? `:${parsed.tag}` : ''}${parsed.digest !== undefined ? `@${parsed.digest.toLowerCase()}` : ''}`;
  const out: ImageRef = { domain, repository, full };
  if (parsed.tag !== undefined) out.tag = parsed.tag;
  if (parsed.digest !== undefined) out.digest = parsed.digest.toLowerCase();
  return out;
}

/**
 * True when the engine may read the reference as an image id: "sha256:<hex>", or any run of hex digits (the engine
 * tries such a name first, then any local image whose id starts with it: "51805a59db9b" runs that image).
 */
export function looksLikeImageId(ref: string): boolean {
  return /^(sha256:)?[0-9a-f]{1,64}$/i.test(ref.trim());
}

/** True when the reference names its content by digest (repo@sha256:…), so a registry cannot swap it. */
export function isDigestPinned(ref: string): boolean {
  return /@sha256:[0-9a-f]{64}$/.test(ref.trim());
}

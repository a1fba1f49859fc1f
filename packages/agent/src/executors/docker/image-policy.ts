/**
 * The node's image allow and deny lists: which images it agrees to run (deny wins; an empty allow list allows all).
 * Checked twice: on the reference before anything is pulled, and on what the engine resolved it to (the image id and
 * every name the engine knows for that id) before anything is created, so neither an id ("51805a59db9b",
 * "sha256:…") nor a registry alias ("registry-1.docker.io/library/busybox") nor a local re-tag slips past a deny.
 */
import { canonicalImageRef, type ImageRef, looksLikeImageId } from './image-ref.js';

export interface ImagePolicy {
  /**
   * Patterns such as "docker.io/library/*", "ghcr.io/org/*", "busybox:1.36"; "*" is any run of characters. A pattern
   * "sha256:<hex>" or of 12-64 hex digits also matches the image whose id starts with it.
   */
  allow: string[];
  deny: string[];
}

export type ImageVerdict = { allowed: true } | { allowed: false; reason: string };

/** What the engine resolved a reference to (docker image inspect). */
export interface ResolvedImageNames {
  /** "sha256:…" of the image config. */
  id: string;
  /** e.g. "busybox:latest"; empty for an untagged image. */
  repoTags: string[];
  /** e.g. "busybox@sha256:…"; empty for an image never pushed or pulled. */
  repoDigests: string[];
}

/**
 * Before the pull. A pattern is normalized like an image reference (so "busybox" means "docker.io/library/busybox")
 * and matches the image's full reference, or its repository alone (so an untagged pattern matches every tag and
 * digest of it). A reference the engine may read as an image id passes the allow list here: it is decided on the
 * names of the image it resolves to (checkResolvedImage).
 */
export function checkImage(image: string, policy: ImagePolicy): ImageVerdict {
  const ref = canonicalImageRef(image);
  const denied = matchName(policy.deny, [ref]);
  if (denied !== undefined) return { allowed: false, reason: `image ${ref.full} is denied on this node (deny pattern "${denied}")` };
  if (policy.allow.length > 0 && !looksLikeImageId(image) && matchName(policy.allow, [ref]) === undefined) {
    return { allowed: false, reason: `image ${ref.full} is not in this node's allow list (${policy.allow.join(', ')})` };
  }
  return { allowed: true };
}

/**
 * After the pull, before the container is created: the deny list is matched against the image id and every name
 * the engine has for it (so a denied image is refused whatever it was called); the allow list needs the requested
 * name (unless it may be an id), one of the image's names, or its id to match.
 */
export function checkResolvedImage(image: string, resolved: ResolvedImageNames, policy: ImagePolicy): ImageVerdict {
  if (policy.allow.length === 0 && policy.deny.length === 0) return { allowed: true };
  const idRef = looksLikeImageId(image);
  const known = [...resolved.repoTags, ...resolved.repoDigests].filter((n) => n && n !== '<none>:<none>' && n !== '<none>@<none>');
  const names = [...(idRef ? [] : [canonicalImageRef(image)]), ...known.map((n) => canonicalImageRef(n))];
  const what = `image ${image} (id ${resolved.id.slice(0, 19)}${known.length > 0 ? `, known here as ${known.slice(0, 4).join(', ')}` : ''})`;
  const denied = matchName(policy.deny, names) ?? matchId(policy.deny, resolved.id);
  if (denied !== undefined) return { allowed: false, reason: `${what} is denied on this node (deny pattern "${denied}")` };
  if (idRef && known.length === 0) {
    return { allowed: false, reason: `${what} is referenced by id and has no name this node's image lists can be checked against; name it by repository:tag or repository@digest` };
  }
  if (policy.allow.length > 0 && matchName(policy.allow, names) === undefined && matchId(policy.allow, resolved.id) === undefined) {
    return { allowed: false, reason: `${what} is not in this node's allow list (${policy.allow.join(', ')})` };
  }
  return { allowed: true };
}

function matchName(patterns: string[], refs: ImageRef[]): string | undefined {
  const candidates = refs.flatMap((ref) => {
    const out = [ref.full, ref.repository];
    if (ref.tag !== undefined) out.push(`${ref.repository}:${ref.tag}`);
    if (ref.digest !== undefined) out.push(`${ref.repository}@${ref.digest}`);
    return out;
  });
  return patterns.find((p) => {
    const re = patternRegex(p);
    return candidates.some((c) => re.test(c));
  });
}

/** A pattern "sha256:<hex>" or of 12-64 hex digits (the engine's short id is 12) names the image whose id starts with it. */
function matchId(patterns: string[], id: string): string | undefined {
  const full = id.toLowerCase();
  return patterns.find((p) => {
    const m = /^(sha256:)?([0-9a-f]+)$/i.exec(p.trim());
    if (!m?.[2] || (m[1] === undefined && m[2].length < 12) || m[2].length > 64) return false;
    return full.startsWith(`sha256:${m[2].toLowerCase()}`);
  });
}

function patternRegex(pattern: string): RegExp {
  const p = pattern.trim();
  if (p === '*') return /^/;
  const normalized = canonicalImageRef(p, { defaultTag: false }).full;
  const body = normalized
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`, 'i');
}

/** The node's image allow and deny lists: which images it agrees to run (deny wins; an empty allow list allows all). */
import { parseImageRef } from './image-ref.js';

export interface ImagePolicy {
  /** Patterns such as "docker.io/library/*", "ghcr.io/org/*", "busybox:1.36"; "*" is any run of characters. */
  allow: string[];
  deny: string[];
}

export type ImageVerdict = { allowed: true } | { allowed: false; reason: string };

/**
 * A pattern is normalized like an image reference (so "busybox" means "docker.io/library/busybox") and matches the
 * image's full reference, or its repository alone (so an untagged pattern matches every tag and digest of it).
 */
export function checkImage(image: string, policy: ImagePolicy): ImageVerdict {
  const ref = parseImageRef(image);
  const candidates = [ref.full, ref.repository];
  if (ref.tag !== undefined) candidates.push(`${ref.repository}:${ref.tag}`);
  if (ref.digest !== undefined) candidates.push(`${ref.repository}@${ref.digest}`);
  const matching = (patterns: string[]) => patterns.find((p) => candidates.some((c) => patternRegex(p).test(c)));
  const denied = matching(policy.deny);
  if (denied !== undefined) return { allowed: false, reason: `image ${ref.full} is denied on this node (deny pattern "${denied}")` };
  if (policy.allow.length > 0 && matching(policy.allow) === undefined) {
    return { allowed: false, reason: `image ${ref.full} is not in this node's allow list (${policy.allow.join(', ')})` };
  }
  return { allowed: true };
}

function patternRegex(pattern: string): RegExp {
  const p = pattern.trim();
  if (p === '*') return /^/;
  const normalized = parseImageRef(p, { defaultTag: false }).full;
  const body = normalized
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`);
}

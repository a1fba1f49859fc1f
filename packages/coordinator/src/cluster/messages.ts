/**
 * What one replica tells the others (issue 14). A message says what changed, never the new state: the receiver
 * reads the store, so a message lost or late costs a delay until the next resync, never a wrong decision.
 */
export type ClusterMessage =
  /** An assignment or cancel for the node: wake its work long-polls (and, off the leader, re-read its reservations). */
  | { t: 'work'; node: string }
  /** New log lines or a state change of the job: wake its log long-polls. */
  | { t: 'logs'; job: string }
  /** Queued work or new room: the leader should run a scheduling pass soon. */
  | { t: 'kick' }
  /** The node's record changed (registered, online/offline, cordoned, tier, proof, stake, banned, removed). */
  | { t: 'node'; node: string }
  /** The attempt ended: its reservation goes back to its node. */
  | { t: 'ended'; attempt: string; job: string }
  /** A provider's ask changed: re-read the provider's asks and re-price its nodes. */
  | { t: 'asks'; provider: string }
  /** The price index moved (a market epoch): re-read the price book. */
  | { t: 'prices' };

const MAX_ID = 200;
const str = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= MAX_ID;

/** One message from a notification payload, or null for anything malformed (a newer replica's kind, garbage). */
export function parseMessage(v: unknown): ClusterMessage | null {
  if (typeof v !== 'object' || v === null) return null;
  const m = v as Record<string, unknown>;
  switch (m.t) {
    case 'work':
    case 'node':
      return str(m.node) ? { t: m.t, node: m.node } : null;
    case 'logs':
      return str(m.job) ? { t: 'logs', job: m.job } : null;
    case 'ended':
      return str(m.attempt) && str(m.job) ? { t: 'ended', attempt: m.attempt, job: m.job } : null;
    case 'asks':
      return str(m.provider) ? { t: 'asks', provider: m.provider } : null;
    case 'kick':
    case 'prices':
      return { t: m.t };
    default:
      return null;
  }
}

/** Messages equal in what they ask for are sent once per flush (a burst of log appends to one job is one wake). */
export function messageKey(m: ClusterMessage): string {
  switch (m.t) {
    case 'work':
    case 'node':
      return `${m.t}:${m.node}`;
    case 'logs':
      return `logs:${m.job}`;
    case 'ended':
      return `ended:${m.attempt}`;
    case 'asks':
      return `asks:${m.provider}`;
    default:
      return m.t;
  }
}

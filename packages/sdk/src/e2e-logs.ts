/**
 * Logs of an end-to-end encrypted job (issue 13): each entry's data is ciphertext under the attempt's output key,
 * which the node wrapped to the buyer's key (GET /v1/jobs/:id/key-requests lists them). Entries are decrypted here
 * with the buyer key; one that does not authenticate (altered, moved, or written by someone without the key) is
 * flagged, never shown as the job's output. The coordinator's own log-limit marker (seq above LOG_SEQ_MAX) is its
 * plain text.
 */
import { type JobLogEntry, LOG_SEQ_MAX } from '@gpux/protocol';
import { decryptLogData, unwrapKey, type X25519KeyPair, x25519Fingerprint } from '@gpux/protocol/e2e';
import type { GpuxClient } from './client.js';
import { callRoute, type TransportConfig } from './transport.js';

const cfgOf = (client: GpuxClient) => (client as unknown as { cfg: TransportConfig }).cfg;

export interface DecryptedLogEntry extends JobLogEntry {
  /** false: the entry did not decrypt with its attempt's output key (its data is then a notice, not the job's output). */
  authentic: boolean;
}

export class EncryptedLogReader {
  private readonly keys = new Map<string, Uint8Array>();
  /** Attempts already looked up without a key (asked once: a node announces its key before its first log). */
  private readonly missing = new Set<string>();

  constructor(
    private readonly client: GpuxClient,
    private readonly jobId: string,
    private readonly buyer: X25519KeyPair,
  ) {}

  async decrypt(entry: JobLogEntry): Promise<DecryptedLogEntry> {
    if (entry.seq > LOG_SEQ_MAX) return { ...entry, stream: 'system', authentic: false };
    const key = this.keys.get(entry.attemptId) ?? (this.missing.has(entry.attemptId) ? undefined : await this.refresh(entry.attemptId));
    if (key && entry.stream !== undefined) {
      try {
        const text = decryptLogData(entry.data, key, { attemptId: entry.attemptId, seq: entry.seq, stream: entry.stream }).toString('utf8');
        return { ...entry, data: text, authentic: true };
      } catch {
        // flagged below
      }
    }
    const why = key ? 'does not decrypt (altered, or not written by the node)' : 'has no output key announced for its attempt';
    return { ...entry, stream: 'system', data: `[encrypted log entry ${entry.seq} of attempt ${entry.attemptId} ${why}; not shown]\n`, authentic: false };
  }

  /** Reads the output keys the nodes announced (once per unknown attempt), unwrapped with the buyer key. */
  private async refresh(attemptId: string): Promise<Uint8Array | undefined> {
    const list = await callRoute(cfgOf(this.client), 'keyRequests', { params: { id: this.jobId } });
    for (const k of list.outputKeys) {
      if (this.keys.has(k.attemptId)) continue;
      try {
        const ctx = { purpose: 'output' as const, jobId: k.jobId, attemptId: k.attemptId, recipientFingerprint: x25519Fingerprint(this.buyer.publicKey) };
        this.keys.set(k.attemptId, await unwrapKey(k.wrappedKey, this.buyer.privateKey, ctx));
      } catch {
        // not ours to open: its entries stay flagged
      }
    }
    const key = this.keys.get(attemptId);
    if (!key) this.missing.add(attemptId);
    return key;
  }
}

/**
 * Log entries of an encrypted job (issue 13): each entry's `data` is base64 of nonce (12 random bytes) ‖
 * AES-256-GCM ciphertext ‖ tag (16), under a key derived from the attempt's output key:
 *   log key = HKDF-SHA256(ikm = output key, salt = empty, info = "gpux-e2e-v1 log", 32 bytes)
 *   aad     = "gpux-e2e-v1 log\n" + attemptId + "\n" + seq + "\n" + stream   (UTF-8)
 * so an entry cannot be moved to another attempt, seq or stream. The coordinator stores and relays the text.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { LOG_ENTRY_MAX_BYTES } from '../job.js';
import { E2eDecryptError } from './stream.js';
import { DATA_KEY_BYTES } from './wrap.js';

/** Most plaintext bytes one encrypted entry may carry, so its base64 stays within LOG_ENTRY_MAX_BYTES. */
export const MAX_LOG_PLAINTEXT_BYTES = Math.floor(LOG_ENTRY_MAX_BYTES / 4) * 3 - 28;

export interface LogEntryContext {
  attemptId: string;
  seq: number;
  stream: 'stdout' | 'stderr' | 'system';
}

function logKey(outputKey: Uint8Array): Buffer {
  if (outputKey.length !== DATA_KEY_BYTES) throw new Error(`an output key has ${DATA_KEY_BYTES} bytes`);
  return Buffer.from(hkdfSync('sha256', outputKey, Buffer.alloc(0), Buffer.from('gpux-e2e-v1 log', 'utf8'), 32));
}

const aadOf = (c: LogEntryContext) => Buffer.from(`gpux-e2e-v1 log\n${c.attemptId}\n${c.seq}\n${c.stream}`, 'utf8');

/** The `data` of an encrypted log entry (base64). Split longer text first: at most MAX_LOG_PLAINTEXT_BYTES. */
export function encryptLogData(text: string | Uint8Array, outputKey: Uint8Array, ctx: LogEntryContext): string {
  const plain = typeof text === 'string' ? Buffer.from(text, 'utf8') : Buffer.from(text);
  if (plain.length > MAX_LOG_PLAINTEXT_BYTES) throw new Error(`an encrypted log entry holds at most ${MAX_LOG_PLAINTEXT_BYTES} bytes; split it`);
  const nonce = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', logKey(outputKey), nonce);
  c.setAAD(aadOf(ctx));
  return Buffer.concat([nonce, c.update(plain), c.final(), c.getAuthTag()]).toString('base64');
}

/** The plaintext bytes of an encrypted log entry's data; E2eDecryptError when it is not this entry's. */
export function decryptLogData(data: string, outputKey: Uint8Array, ctx: LogEntryContext): Buffer {
  const raw = Buffer.from(data, 'base64');
  if (raw.length < 28) throw new E2eDecryptError(`log entry ${ctx.seq}: too short to be an encrypted entry`);
  const d = createDecipheriv('aes-256-gcm', logKey(outputKey), raw.subarray(0, 12));
  d.setAAD(aadOf(ctx));
  d.setAuthTag(raw.subarray(raw.length - 16));
  try {
    return Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]);
  } catch {
    throw new E2eDecryptError(`log entry ${ctx.seq} of attempt ${ctx.attemptId} does not authenticate (altered, moved, or another key)`);
  }
}

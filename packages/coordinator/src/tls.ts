/**
 * The coordinator's own HTTPS: load the certificate and key files (a clear error naming the path when either is
 * missing, unreadable or not a matching PEM pair) and watch them, so a renewed certificate (certbot, a private CA's
 * rotation) is served to new connections without a restart. Connections already open keep the context they were
 * made with; nothing is dropped.
 */
import { readFileSync, type Stats, type StatWatcher, unwatchFile, watchFile } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { GpuxError } from '@gpux/core';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

export interface TlsPair {
  cert: Buffer;
  key: Buffer;
}

/** How often the files are polled by default: a renewal shows within seconds, at the cost of two stat calls. */
export const TLS_WATCH_INTERVAL_MS = 2000;

function readPem(file: string, variable: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : `cannot be read (${(err as Error).message})`;
    throw new GpuxError('REQUEST_INVALID', `${variable}=${JSON.stringify(file)} ${reason}: give the path of a PEM file the coordinator can read`);
  }
}

/** Read both files and check they make a usable pair (PEM that parses, a key that matches the certificate). */
export function loadTlsPair(files: TlsFiles): TlsPair {
  const cert = readPem(files.certFile, 'GPUX_TLS_CERT_FILE');
  const key = readPem(files.keyFile, 'GPUX_TLS_KEY_FILE');
  try {
    // Throws on a certificate or key that does not parse, and on a key that is not the certificate's.
    createSecureContext({ cert, key });
  } catch (err) {
    throw new GpuxError(
      'REQUEST_INVALID',
      `GPUX_TLS_CERT_FILE=${JSON.stringify(files.certFile)} and GPUX_TLS_KEY_FILE=${JSON.stringify(files.keyFile)} are not a usable pair (${(err as Error).message}): give a PEM certificate and the PEM private key it was issued for`,
      { cause: err },
    );
  }
  return { cert, key };
}

export interface TlsWatchOptions {
  intervalMs?: number;
  /** A new valid pair: install it (server.setSecureContext). */
  apply(pair: TlsPair): void;
  /** A change that did not give a valid pair (a half-written renewal, a mismatched key): the old pair stays. */
  onError(err: unknown): void;
}

/** Poll both files; on a change re-read the pair and apply it. Unref'd: it never keeps the process alive. Returns stop. */
export function watchTlsFiles(files: TlsFiles, opts: TlsWatchOptions): () => void {
  const intervalMs = opts.intervalMs ?? TLS_WATCH_INTERVAL_MS;
  const onChange = (curr: Stats, prev: Stats) => {
    // A replaced file (rename) changes the inode; an edited one its mtime or size.
    if (curr.mtimeMs === prev.mtimeMs && curr.ino === prev.ino && curr.size === prev.size) return;
    let pair: TlsPair;
    try {
      pair = loadTlsPair(files);
    } catch (err) {
      opts.onError(err);
      return;
    }
    try {
      opts.apply(pair);
    } catch (err) {
      opts.onError(err);
    }
  };
  const paths = [...new Set([files.certFile, files.keyFile])];
  const watchers: StatWatcher[] = paths.map((p) => watchFile(p, { interval: intervalMs, persistent: false }, onChange));
  for (const w of watchers) w.unref();
  return () => {
    for (const p of paths) unwatchFile(p, onChange);
  };
}

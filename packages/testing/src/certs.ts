/**
 * Throwaway certificates for TLS tests, made with the openssl CLI (no npm dependency): a CA and server
 * certificates it signs, for 127.0.0.1 and localhost by default. Tests that need them skip (or fail under
 * GPUX_REQUIRE_ALL=1) when openssl is missing: `requireComponent('openssl', opensslAvailable(), …)`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const OPENSSL_WHY = 'the TLS tests make their certificates with the openssl CLI (apt-get install openssl)';

export function opensslAvailable(): boolean {
  return spawnSync('openssl', ['version']).status === 0;
}

function openssl(dir: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

export interface CertPair {
  /** Path of the PEM certificate. */
  cert: string;
  /** Path of its PEM private key. */
  key: string;
}

export interface TestCa {
  dir: string;
  /** Path of the CA certificate (the bundle a client trusts). */
  ca: string;
  /** Server certificates by name, each with its own key. */
  servers: Record<string, CertPair>;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

/**
 * A CA (`<prefix>ca.pem`) and one server certificate per name (`<name>.pem`, `<name>.key`) in `dir`, valid two
 * days for `subjectAltName` (default IP:127.0.0.1,DNS:localhost). `prefix` lets two CAs share a directory.
 */
export function makeTestCa(dir: string, opts: { servers?: string[]; subjectAltName?: string; prefix?: string } = {}): TestCa {
  const prefix = opts.prefix ?? '';
  const ca = `${prefix}ca.pem`;
  openssl(dir, 'req', '-x509', ...EC, '-keyout', `${prefix}ca.key`, '-out', ca, '-days', '2', '-subj', `/CN=gpux test ${prefix}CA`);
  const ext = `${prefix}server.ext`;
  writeFileSync(
    join(dir, ext),
    `subjectAltName=${opts.subjectAltName ?? 'IP:127.0.0.1,DNS:localhost'}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n`,
  );
  const servers: Record<string, CertPair> = {};
  (opts.servers ?? ['server']).forEach((name, i) => {
    openssl(dir, 'req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=gpux test ${name}`);
    openssl(dir, 'x509', '-req', '-in', `${name}.csr`, '-CA', ca, '-CAkey', `${prefix}ca.key`, '-set_serial', String(i + 1), '-days', '2', '-extfile', ext, '-out', `${name}.pem`);
    servers[name] = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
  });
  return { dir, ca: join(dir, ca), servers };
}

/** The certificate's sha256 fingerprint as Node prints it ("AB:CD:…"). */
export function certFingerprint(certFile: string): string {
  return new X509Certificate(readFileSync(certFile)).fingerprint256;
}

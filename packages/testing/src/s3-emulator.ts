/**
 * A throwaway S3-compatible server for tests: s3rver, an EMULATOR of the S3 API (npm, a root devDependency;
 * no real S3-compatible server can be installed here from the registries). It keeps objects in a temp dir
 * and listens on 127.0.0.1. Absent (no `npm ci`), tests skip by requireS3Emulator, or fail under GPUX_REQUIRE_ALL=1.
 */
import { createRequire } from 'node:module';
import { requireComponent } from './components.js';
import { type TempDir, tempDir } from './temp-dir.js';

export interface S3Emulator {
  endpoint: string;
  bucket: string;
  /** Credentials s3rver accepts (it checks signatures with its default key pair). */
  accessKeyId: string;
  secretAccessKey: string;
  stop(): Promise<void>;
}

interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
type S3rverCtor = new (opts: Record<string, unknown>) => S3rverInstance;

function loadS3rver(): S3rverCtor | undefined {
  try {
    return createRequire(import.meta.url)('s3rver') as S3rverCtor;
  } catch {
    return undefined;
  }
}

export function s3EmulatorAvailable(): boolean {
  return loadS3rver() !== undefined;
}

/** node:test options: skip (or fail under GPUX_REQUIRE_ALL=1) when s3rver is not installed. */
export function requireS3Emulator(): { skip: string | false } {
  return requireComponent('the S3 emulator (s3rver)', s3EmulatorAvailable(), 'run `npm ci` at the repository root (s3rver is a devDependency)');
}

export async function startS3Emulator(bucket = 'gpux-blobs'): Promise<S3Emulator> {
  const S3rver = loadS3rver();
  if (!S3rver) throw new Error('s3rver is not installed: run `npm ci` at the repository root');
  const dir: TempDir = tempDir('gpux-s3rver');
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir.path, configureBuckets: [{ name: bucket }] });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    stop: async () => {
      await server.close();
      await dir.cleanup();
    },
  };
}

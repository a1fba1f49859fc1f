/**
 * The node's data dir holds its private key, the pinned coordinator keys and the attempts' work dirs: 0700, the key files 0600,
 * whatever the umask. An existing dir or key found open to other local users is tightened at start, with a notice.
 */
import { chmod, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { COORDINATOR_KEYS_FILE } from './coordinator-keys-file.js';
import { ENC_KEY_FILE } from './e2e/node-encryption-key.js';
import { KEY_FILE } from './identity.js';

export async function secureNodeDataDir(dataDir: string, notice: (message: string) => void): Promise<void> {
  await tighten(dataDir, 0o700, notice, true);
  await tighten(join(dataDir, KEY_FILE), 0o600, notice, false);
  await tighten(join(dataDir, ENC_KEY_FILE), 0o600, notice, false);
  await tighten(join(dataDir, COORDINATOR_KEYS_FILE), 0o600, notice, false); // whoever writes it chooses whom the node obeys
  await tighten(join(dataDir, 'work'), 0o700, notice, true);
}

async function tighten(path: string, want: number, notice: (message: string) => void, dir: boolean): Promise<void> {
  let st: Awaited<ReturnType<typeof stat>>;
  try {
    st = await stat(path);
  } catch {
    return; // created later, with the right mode
  }
  const mode = st.mode & 0o777;
  if (st.isDirectory() !== dir || (mode & 0o077) === 0) return;
  // Never a shared dir (sticky, like /tmp) or one another user owns.
  if ((st.mode & 0o1000) !== 0 || (process.getuid !== undefined && st.uid !== process.getuid())) {
    notice(`${path} is open to other local users (mode 0${mode.toString(8)}) and not this user's to change; move the node's data dir (--data-dir) somewhere private`);
    return;
  }
  await chmod(path, want);
  notice(`${path} was open to other local users (mode 0${mode.toString(8)}); now 0${want.toString(8)}`);
}

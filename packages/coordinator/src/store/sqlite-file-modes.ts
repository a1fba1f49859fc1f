/**
 * The SQLite database holds specs, env secrets, logs and outputs: its files are 0600 and the data dir it lives in
 * 0700, whatever the umask (chmod after create), and an existing database or data dir found wider is tightened at
 * start, with a notice.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';

export type ModeNotice = (message: string) => void;

const FILE_MODE = 0o600;
const DIR_MODE = 0o700;
/** The files SQLite keeps next to the database. */
const SIDE_FILES = ['-wal', '-shm', '-journal'];

/** Before the open: the dir (0700 when created here, or when it holds only this database), the file created 0600. */
export function secureDatabaseLocation(path: string, notice: ModeNotice): void {
  const file = resolve(path);
  const dir = dirname(file);
  const created = mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  if (created !== undefined) {
    // Every dir made here, from the first one down (the umask may have left them wider or narrower).
    let d = created;
    chmodSync(d, DIR_MODE);
    for (const part of relative(created, dir).split(sep).filter(Boolean)) {
      d = join(d, part);
      chmodSync(d, DIR_MODE);
    }
  } else tightenDataDir(dir, basename(file), notice);
  if (!existsSync(file)) closeSync(openSync(file, 'a', FILE_MODE));
  secureDatabaseFiles(file, notice);
}

/** The database and its -wal/-shm/-journal files to 0600 (after the open too: WAL mode creates its files then). */
export function secureDatabaseFiles(path: string, notice: ModeNotice): void {
  const file = resolve(path);
  for (const f of [file, ...SIDE_FILES.map((s) => `${file}${s}`)]) {
    let mode: number;
    try {
      mode = statSync(f).mode & 0o777;
    } catch {
      continue; // not there (yet)
    }
    if (mode === FILE_MODE) continue;
    chmodSync(f, FILE_MODE);
    if (mode & 0o077) notice(`${f} was readable by other local users (mode ${octal(mode)}); now ${octal(FILE_MODE)}`);
  }
}

/**
 * An existing dir is the coordinator's data dir, and tightened, when this process owns it, it is no shared dir
 * (sticky, like /tmp) and it holds only this database's files; another dir (a home, a project) is left as it is.
 */
function tightenDataDir(dir: string, dbName: string, notice: ModeNotice): void {
  const st = statSync(dir);
  const mode = st.mode & 0o777;
  if ((mode & 0o077) === 0) return;
  const ours = process.getuid === undefined || st.uid === process.getuid();
  const sticky = (st.mode & 0o1000) !== 0;
  const names = readdirSync(dir);
  const onlyDatabase = names.every((name) => name === dbName || SIDE_FILES.some((s) => name === `${dbName}${s}`));
  if (!ours || sticky || !onlyDatabase) return;
  chmodSync(dir, DIR_MODE);
  // An empty dir made just before (gpux dev makes it first) exposed nothing: no notice.
  if (names.length > 0) notice(`the data dir ${dir} was open to other local users (mode ${octal(mode)}); now ${octal(DIR_MODE)}`);
}

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}

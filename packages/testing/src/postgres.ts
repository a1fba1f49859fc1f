/**
 * A throwaway PostgreSQL for tests: a fresh database on GPUX_TEST_PG_URL's server, or a private cluster
 * (initdb + pg_ctl) in a temp dir on a free port, run as the `postgres` user when we are root.
 */
import { execFile, spawnSync } from 'node:child_process';
import { chownSync, existsSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { freePort } from './free-port.js';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { requireComponent } from './components.js';
import { removeDirSync, tempDir } from './temp-dir.js';

const run = promisify(execFile);

export interface PostgresServer {
  /** URL of a fresh, empty database. */
  url: string;
  /**
   * Another fresh database on the same server (dropped or removed by stop()). `template`: a database (name
   * or URL) to copy, e.g. one already migrated; it must have no open connections.
   */
  newDatabase(opts?: { template?: string }): Promise<string>;
  /**
   * The private cluster's URL over its Unix socket (same database as `url`); undefined on GPUX_TEST_PG_URL's server.
   * A client on the same host spends about half the CPU per query over the socket than over TCP (bench:dispatch).
   */
  viaSocket?(url: string): string;
  stop(): Promise<void>;
}

/** The newest server bin dir: /usr/lib/postgresql/<version>/bin, else the dir of pg_ctl on PATH. */
export function findPostgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'initdb')) && existsSync(join(root, v, 'bin', 'pg_ctl')))
      .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
    if (versions[0]) return join(root, versions[0], 'bin');
  }
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const ctl = join(dir, 'pg_ctl');
    if (!dir || !existsSync(ctl)) continue;
    const bin = dirname(realpathSync(ctl));
    if (existsSync(join(bin, 'initdb'))) return bin;
  }
  return undefined;
}

export function postgresAvailability(): { available: boolean; why: string } {
  if (process.env.GPUX_TEST_PG_URL) return { available: true, why: 'GPUX_TEST_PG_URL is set' };
  const bin = findPostgresBin();
  if (bin) return { available: true, why: `server binaries in ${bin}` };
  return { available: false, why: 'no server binaries (/usr/lib/postgresql/*/bin or pg_ctl on PATH) and GPUX_TEST_PG_URL is not set' };
}

/** node:test options for a suite that needs PostgreSQL (see requireComponent). */
export function requirePostgres(): { skip: string | false } {
  const a = postgresAvailability();
  return requireComponent('PostgreSQL', a.available, a.why);
}

export async function startPostgres(): Promise<PostgresServer> {
  const external = process.env.GPUX_TEST_PG_URL;
  return external ? onExternalServer(external) : startCluster();
}

let dbCounter = 0;
const uniqueDbName = () => `gpux_test_${process.pid}_${Date.now().toString(36)}_${dbCounter++}`;

function createSql(name: string, template: string | undefined): string {
  if (template === undefined) return `CREATE DATABASE "${name}"`;
  const source = template.includes('://') ? decodeURIComponent(new URL(template).pathname.slice(1)) : template;
  return `CREATE DATABASE "${name}" TEMPLATE "${source.replace(/"/g, '""')}"`;
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

async function adminQuery(adminUrl: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

async function onExternalServer(baseUrl: string): Promise<PostgresServer> {
  const created: string[] = [];
  const newDatabase = async (opts: { template?: string } = {}) => {
    const name = uniqueDbName();
    await adminQuery(baseUrl, createSql(name, opts.template));
    created.push(name);
    return withDatabase(baseUrl, name);
  };
  const url = await newDatabase();
  return {
    url,
    newDatabase,
    async stop() {
      for (const name of created.splice(0)) await adminQuery(baseUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

/** uid/gid of a system user from /etc/passwd, or undefined. */
function lookupUser(name: string): { uid: number; gid: number } | undefined {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name}:`));
  const f = line?.split(':');
  return f && f.length > 3 ? { uid: Number(f[2]), gid: Number(f[3]) } : undefined;
}

/** initdb refuses to run as root: run the server binaries as `postgres` then (created only as a last resort). */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  let user = lookupUser('postgres');
  if (!user) {
    process.stderr.write('gpux testing: running as root with no "postgres" user; creating one (useradd --system --no-create-home postgres)\n');
    spawnSync('useradd', ['--system', '--no-create-home', 'postgres'], { stdio: 'inherit' });
    user = lookupUser('postgres');
    if (!user) throw new Error('cannot run PostgreSQL as root and could not create a "postgres" user');
  }
  return user;
}

function asUser(asPostgres: boolean, file: string, args: string[]): [string, string[]] {
  if (!asPostgres) return [file, args];
  if (existsSync('/usr/sbin/runuser') || existsSync('/sbin/runuser')) return ['runuser', ['-u', 'postgres', '--', file, ...args]];
  const quoted = [file, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  return ['su', ['postgres', '-s', '/bin/sh', '-c', quoted]];
}


async function startCluster(): Promise<PostgresServer> {
  const bin = findPostgresBin();
  if (!bin) throw new Error(postgresAvailability().why);
  const user = serverUser();
  const dir = tempDir('gpux-pg');
  const data = join(dir.path, 'data');
  const exec = (tool: string, args: string[]) => {
    const [file, argv] = asUser(user !== undefined, join(bin, tool), args);
    return run(file, argv, { cwd: dir.path, env: { ...process.env, LC_ALL: 'C' }, timeout: 120_000 });
  };
  const pgCtlStopSync = () => {
    const [file, argv] = asUser(user !== undefined, join(bin, 'pg_ctl'), ['-D', data, 'stop', '-m', 'immediate']);
    spawnSync(file, argv, { stdio: 'ignore', timeout: 30_000 });
  };
  // If the test process dies without stop(), do not leave a server running or files behind.
  const onExit = () => {
    pgCtlStopSync();
    removeDirSync(dir.path);
  };
  process.once('exit', onExit);
  try {
    if (user) chownSync(dir.path, user.uid, user.gid);
    await exec('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C']);
    let port = 0;
    for (let tryNo = 1; ; tryNo++) {
      port = await freePort();
      const conf = `\n# gpux test cluster\nlisten_addresses = '127.0.0.1'\nport = ${port}\nunix_socket_directories = '${dir.path}'\n`;
      writeFileSync(join(data, 'postgresql.conf'), conf, { flag: 'a' });
      try {
        await exec('pg_ctl', ['-D', data, '-l', join(dir.path, 'server.log'), '-w', '-t', '60', 'start']);
        break;
      } catch (err) {
        if (tryNo >= 3) throw new Error(`pg_ctl start failed: ${readLog(dir.path)}`, { cause: err });
      }
    }
    const base = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const newDatabase = async (opts: { template?: string } = {}) => {
      const name = uniqueDbName();
      await adminQuery(base, createSql(name, opts.template));
      return withDatabase(base, name);
    };
    const url = await newDatabase();
    let stopped = false;
    return {
      url,
      newDatabase,
      viaSocket: (tcpUrl) => {
        const u = new URL(tcpUrl);
        u.hostname = 'localhost';
        u.port = '';
        u.searchParams.set('host', dir.path);
        u.searchParams.set('port', String(port));
        return u.toString();
      },
      async stop() {
        if (stopped) return;
        stopped = true;
        process.removeListener('exit', onExit);
        // Immediate, not fast: the cluster is thrown away, and a fast stop's shutdown checkpoint flushes
        // every test database to disk first (20 s on a loaded 2-core machine).
        await exec('pg_ctl', ['-D', data, 'stop', '-m', 'immediate', '-w']).catch(() => pgCtlStopSync());
        await dir.cleanup();
      },
    };
  } catch (err) {
    process.removeListener('exit', onExit);
    onExit();
    throw err;
  }
}

function readLog(dir: string): string {
  try {
    return readFileSync(join(dir, 'server.log'), 'utf8').slice(-2000);
  } catch {
    return '(no server log)';
  }
}

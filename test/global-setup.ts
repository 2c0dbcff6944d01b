/**
 * What the whole test run shares, made before the first test file and undone when the run ends,
 * whether the tests passed or not (the workers are not always given the chance to clean up after
 * themselves):
 * - one temp folder, under which test/helpers/temp.ts makes every test's folder;
 * - the Postgres tests' server: `TEST_DATABASE_URL` when it is set, otherwise a throwaway
 *   PostgreSQL (test/helpers/throwaway-postgres.ts) with its data in the temp folder, whose URL
 *   is then published as `TEST_DATABASE_URL`: the workers inherit this process's environment.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ThrowawayPostgresMessage } from './helpers/throwaway-postgres.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const THROWAWAY_POSTGRES = path.join(ROOT, 'test', 'helpers', 'throwaway-postgres.ts');
/** Stopping takes well under a second; past this the server is abandoned rather than the run hung. */
const STOP_TIMEOUT_MS = 15_000;

export default async function setup(): Promise<() => Promise<void>> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'da-tests-'));
  process.env.DURABLE_AGENTS_TEST_TMP = root;
  const removeRoot = () => fs.rmSync(root, { recursive: true, force: true });

  let postgres: ChildProcess | undefined;
  try {
    postgres = await postgresForTheRun(root);
  } catch (err) {
    removeRoot();
    throw err;
  }
  return async () => {
    try {
      if (postgres) await stopThrowawayPostgres(postgres);
    } finally {
      removeRoot();
    }
  };
}

/** Uses `TEST_DATABASE_URL`, or starts a throwaway server and returns its process. */
async function postgresForTheRun(root: string): Promise<ChildProcess | undefined> {
  const given = process.env.TEST_DATABASE_URL;
  if (given) {
    console.log(`Postgres tests: TEST_DATABASE_URL, ${redacted(given)}`);
    return undefined;
  }
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', THROWAWAY_POSTGRES, root], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const first = await new Promise<ThrowawayPostgresMessage>((resolve) => {
    child.once('message', (message) => resolve(message as ThrowawayPostgresMessage));
    child.once('exit', (code, signal) => resolve({ error: `it exited (${code ?? signal}) before it was ready` }));
  });
  if ('error' in first) {
    child.kill('SIGKILL');
    throw new Error(`The tests' PostgreSQL did not start (set TEST_DATABASE_URL to use a running one): ${first.error}`);
  }
  process.env.TEST_DATABASE_URL = first.url;
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`Postgres tests: a throwaway PostgreSQL at ${redacted(first.url)}, ready in ${seconds} s`);
  return child;
}

/** Closing the IPC channel is the signal to stop (the same one a killed run gives). */
async function stopThrowawayPostgres(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<boolean>((resolve) => child.once('exit', () => resolve(true)));
  child.disconnect();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), STOP_TIMEOUT_MS)));
  const stopped = await Promise.race([exited, timedOut]);
  clearTimeout(timer);
  if (!stopped) {
    child.kill('SIGKILL');
    console.error(`The tests' PostgreSQL did not stop within ${STOP_TIMEOUT_MS / 1000} s: its process was killed, the server may live on.`);
  }
}

function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(not a URL)';
  }
}

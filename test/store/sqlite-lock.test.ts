// One writer per SQLite file (src/store/sqlite/writer-lock.ts), read-only opens, and the one clear
// error a store that cannot be opened gives; with real processes where another process matters
// (a holder killed with SIGKILL, a reader beside a writer, file modes that bind).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidInputError, ReadOnlyStoreError, StoreLockedError, StoreUnavailableError } from '../../src/core/errors.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { unprivileged } from '../helpers/permissions.js';
import { ROOT } from '../helpers/server-process.js';
import { tempDbFile, tempDir } from '../helpers/temp.js';
import { checkpoint } from './store-contract.js';

const WORKER = path.join(ROOT, 'test', 'store', 'sqlite-lock-worker.ts');

/** Workers still running, SIGKILLed after each test. */
const workers = new Set<ReturnType<typeof spawn>>();
afterEach(() => {
  for (const child of workers) child.kill('SIGKILL');
  workers.clear();
});

/** Starts the worker (through `prefix`, e.g. setpriv); resolves with its first JSON line and the process. */
async function worker(args: string[], prefix: string[] = []): Promise<{ line: Record<string, any>; child: ReturnType<typeof spawn>; exited: Promise<unknown> }> {
  const [bin, ...rest] = [...prefix, process.execPath, '--conditions=development', '--import', 'tsx', WORKER, ...args];
  const child = spawn(bin!, rest, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  workers.add(child);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const line = await new Promise<Record<string, any>>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('\n')) resolve(JSON.parse(stdout.slice(0, stdout.indexOf('\n'))) as Record<string, any>);
    });
    void exited.then(() => reject(new Error(`the worker exited without a line: ${stderr}`)));
  });
  return { line, child, exited };
}

const newAgent = (id: string) => ({ id, machine: 'agent', machineVersion: '1', input: {}, createdAt: new Date().toISOString() });

async function refusal(open: Promise<SqliteStore>): Promise<Error> {
  const result = await open.then(
    (store) => store,
    (err: unknown) => err as Error,
  );
  if (!(result instanceof Error)) {
    await result.close();
    throw new Error('the open was not refused');
  }
  return result;
}

describe('one writer per SQLite file', () => {
  it('refuses a second open in the same process, naming the file and this pid; the file is free again once the first closes', async () => {
    const file = tempDbFile();
    const first = await openSqliteStore(file);
    const refused = await refusal(openSqliteStore(file));
    expect(refused).toBeInstanceOf(StoreLockedError);
    expect(refused).toMatchObject({ file, holderPid: process.pid });
    expect(refused.message).toContain(`${file} is in use: process ${process.pid}`);
    // A refused attempt takes nothing from the holder: its lock holds (a third is refused), and it writes on.
    expect(await refusal(openSqliteStore(file))).toBeInstanceOf(StoreLockedError);
    await first.createAgent(newAgent('a1'));
    await first.close();
    const again = await openSqliteStore(file);
    expect(await again.getAgent('a1')).toMatchObject({ id: 'a1' });
    await again.close();
    // The holder's note goes with its lock; the lock file stays (an empty database: it only carries the lock).
    expect(fs.readdirSync(path.dirname(file)).sort()).toEqual(['agents.db', 'agents.db.lock']);
  });

  it('finds the same lock whatever the spelling of the path (relative, through a symlink)', async () => {
    const file = tempDbFile();
    const link = path.join(tempDir(), 'linked');
    fs.symlinkSync(path.dirname(file), link);
    const first = await openSqliteStore(file);
    try {
      expect(await refusal(openSqliteStore(path.join(link, 'agents.db')))).toBeInstanceOf(StoreLockedError);
      expect(await refusal(openSqliteStore(path.relative(process.cwd(), file)))).toBeInstanceOf(StoreLockedError);
    } finally {
      await first.close();
    }
  });

  it("refuses a file another process holds, naming that process's pid; once it is SIGKILLed the file opens at once", { timeout: 60_000 }, async () => {
    const file = tempDbFile();
    const holder = await worker(['hold', file]);
    expect(holder.line).toEqual({ holding: holder.child.pid });

    const refused = await refusal(openSqliteStore(file));
    expect(refused).toBeInstanceOf(StoreLockedError);
    expect(refused).toMatchObject({ file, holderPid: holder.child.pid });
    expect(refused.message).toContain(`process ${holder.child.pid}`);

    holder.child.kill('SIGKILL');
    await holder.exited;
    // The kernel dropped its lock; the note it left names a dead process and decides nothing.
    expect(fs.existsSync(`${file}.lock.json`)).toBe(true);
    const store = await openSqliteStore(file);
    try {
      expect(await store.getAgent('held-1')).toMatchObject({ id: 'held-1' }); // committed before the kill
      expect(JSON.parse(fs.readFileSync(`${file}.lock.json`, 'utf8'))).toMatchObject({ pid: process.pid });
      const again = await worker(['open', file]);
      expect(again.line.error).toMatchObject({ name: 'StoreLockedError', holderPid: process.pid });
    } finally {
      await store.close();
    }
  });
});

describe('a read-only SQLite store', () => {
  it('opens beside the live writer without its lock, sees its commits as they land, and refuses every write', { timeout: 60_000 }, async () => {
    const file = tempDbFile();
    const writer = await openSqliteStore(file);
    await writer.createAgent(newAgent('a1'));
    const reader = await openSqliteStore(file, { readOnly: true });
    try {
      expect(reader.readOnly).toBe(true);
      expect(await reader.getAgent('a1')).toMatchObject({ lastSeq: 0 });
      await writer.commit([checkpoint('a1', 1)]);
      await writer.createAgent(newAgent('a2'));
      expect(await reader.getAgent('a1')).toMatchObject({ lastSeq: 1 });
      expect((await reader.listAgents({ limit: 10 })).items.map((a) => a.id)).toEqual(['a1', 'a2']);
      expect(await reader.listCheckpoints('a1')).toHaveLength(1);

      const writes: Promise<unknown>[] = [
        reader.createAgent(newAgent('a3')),
        reader.commit([checkpoint('a1', 2)]),
        reader.pruneHistory('a1', { keepNewest: 1 }, { parts: true }),
        reader.deleteEndedAgents({ endedBefore: new Date().toISOString(), limit: 10 }),
      ];
      for (const write of writes) await expect(write).rejects.toBeInstanceOf(ReadOnlyStoreError);
      expect(await writer.getAgent('a3')).toBeUndefined();

      // Another process reads it too, through the same -shm, while this one writes.
      const other = await worker(['open', file, 'read-only']);
      expect(other.line).toEqual({ agents: ['a1', 'a2'], write: 'ReadOnlyStoreError' });
    } finally {
      await reader.close();
      await writer.close();
    }
  });

  it('takes no lock: a writer opens the file while readers have it open', async () => {
    const file = tempDbFile();
    await (await openSqliteStore(file)).close();
    const reader = await openSqliteStore(file, { readOnly: true });
    const writer = await openSqliteStore(file);
    await writer.createAgent(newAgent('a1'));
    expect(await reader.getAgent('a1')).toMatchObject({ id: 'a1' });
    await writer.close();
    await reader.close();
  });

  it('is what a file this process may not write opens as; a writable open refuses it at once, saying so', { timeout: 60_000 }, async () => {
    const file = tempDbFile();
    const setUp = await openSqliteStore(file);
    await setUp.createAgent(newAgent('kept'));
    await setUp.close();
    fs.chmodSync(file, 0o444);
    // As root, through setpriv without CAP_DAC_OVERRIDE: the mode binds either way (test/helpers/permissions.ts).
    const asUser = unprivileged();

    const refused = await worker(['open', file], asUser);
    expect(refused.line.error).toMatchObject({ name: 'StoreUnavailableError' });
    expect(refused.line.error.message).toBe(
      `Cannot open the store at ${file}: this process may not write the file (its permissions, or a read-only file system); ` +
        'start it with --read-only (or { readOnly: true }) to serve what it holds without writing.',
    );
    const readOnly = await worker(['open', file, 'read-only'], asUser);
    expect(readOnly.line).toEqual({ agents: ['kept'], write: 'ReadOnlyStoreError' });
  });

  it('in a folder it may not write, reads beside a running writer (its -shm is there), and says why not without one', { timeout: 60_000 }, async () => {
    const file = tempDbFile();
    const folder = path.dirname(file);
    const holder = await worker(['hold', file]);
    fs.chmodSync(folder, 0o555);
    try {
      const asUser = unprivileged();
      const beside = await worker(['open', file, 'read-only'], asUser);
      expect(beside.line).toEqual({ agents: ['held-1'], write: 'ReadOnlyStoreError' });

      holder.child.kill('SIGKILL');
      await holder.exited;
      // Gone with a clean close: the writer's last connection removes -wal and -shm.
      fs.chmodSync(folder, 0o755);
      await (await openSqliteStore(file)).close();
      fs.chmodSync(folder, 0o555);
      expect(fs.existsSync(`${file}-shm`)).toBe(false);
      const alone = await worker(['open', file, 'read-only'], asUser);
      expect(alone.line.error.message).toContain('reading a WAL database needs its -shm file beside it');
      expect(alone.line.error.message).toContain(file);
    } finally {
      fs.chmodSync(folder, 0o755);
    }
  });
});

describe('a SQLite store that cannot be opened', () => {
  it('says so in one StoreUnavailableError naming the file and the cause, and leaves no lock held', async () => {
    const notADatabase = path.join(tempDir(), 'notes.db');
    fs.writeFileSync(notADatabase, 'These are notes, not a database.\n'.repeat(200));
    for (let attempt = 0; attempt < 2; attempt++) {
      const err = await refusal(openSqliteStore(notADatabase));
      expect(err).toBeInstanceOf(StoreUnavailableError); // the second time too: the failed open released its lock
      expect(err.message).toBe(`Cannot open the store at ${notADatabase}: file is not a database.`);
    }

    const underAFile = path.join(notADatabase, 'agents.db');
    const noFolder = await refusal(openSqliteStore(underAFile));
    expect(noFolder).toBeInstanceOf(StoreUnavailableError);
    expect(noFolder.message).toContain(`Cannot open the store at ${underAFile}: its folder ${notADatabase} cannot be created (`);

    const missing = path.join(tempDir(), 'missing.db');
    const readOnlyMissing = await refusal(openSqliteStore(missing, { readOnly: true }));
    expect(readOnlyMissing.message).toBe(`Cannot open the store at ${missing}: there is no such file (a read-only store opens an existing one).`);
    expect(fs.existsSync(missing)).toBe(false);
    await expect(openSqliteStore(':memory:', { readOnly: true })).rejects.toBeInstanceOf(InvalidInputError);
  });
});

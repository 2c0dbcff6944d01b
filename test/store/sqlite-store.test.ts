import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import { FencedError, SchemaTooNewError } from '../../src/core/errors.js';
import { migrations } from '../../src/store/sqlite/migrations.js';
import { openSqliteStore, SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { tempDbFile, tempDir } from '../helpers/temp.js';
import { appendEvent, checkpoint, storeContract } from './store-contract.js';

storeContract('SQLite', () => openSqliteStore(tempDbFile()));

describe('SQLite store files', () => {
  it('creates the file, its folder and the whole schema from nothing', async () => {
    const file = path.join(tempDir(), 'nested', 'deeper', 'agents.db');
    const store = await openSqliteStore(file);
    await store.close();
    expect(fs.existsSync(file)).toBe(true);
    const db = new Database(file, { readonly: true });
    const tables = (db.prepare(`select name from sqlite_master where type = 'table' order by name`).all() as { name: string }[]).map((t) => t.name);
    expect(tables).toEqual(['actions', 'agent_inputs', 'agents', 'checkpoints', 'effects', 'events', 'schema_migrations', 'snapshot_parts']);
    expect(db.prepare('select id, name from schema_migrations').all()).toEqual(migrations.map(({ id, name }) => ({ id, name })));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
  });

  it('reopens an existing file without migrating twice and keeps its data', async () => {
    const file = tempDbFile();
    const first = await openSqliteStore(file);
    await first.createAgent({ id: 'a1', machine: 'agent', machineVersion: '1', input: {}, createdAt: new Date().toISOString() });
    await first.close();
    const second = await openSqliteStore(file);
    expect(await second.getAgent('a1')).toMatchObject({ id: 'a1' });
    expect((second.db.prepare('select count(*) as n from schema_migrations').get() as { n: number }).n).toBe(migrations.length);
    await second.close();
  });

  it('upgrades a file written by an earlier schema version and keeps its agents whole', async () => {
    const file = tempDbFile();
    const db = new Database(file);
    db.exec('create table schema_migrations (id integer primary key, name text not null, applied_at text not null)');
    for (const m of migrations.filter((m) => m.id <= 2)) {
      db.exec(m.sql);
      db.prepare('insert into schema_migrations (id, name, applied_at) values (?, ?, ?)').run(m.id, m.name, new Date().toISOString());
    }
    db.prepare(
      `insert into agents (id, machine, machine_version, status, state, progress, input, last_seq, created_at, updated_at)
       values ('old', 'agent', '1', 'active', '"idle"', 2, '{"tasks":["kept"]}', 0, 'then', 'then')`,
    ).run();
    db.close();
    const store = await openSqliteStore(file);
    expect(await store.getAgent('old')).toMatchObject({ id: 'old', state: 'idle', progress: 2 });
    expect((await store.listAgents({ limit: 10 })).items.map((a) => a.id)).toEqual(['old']);
    expect(await store.getInput('old')).toEqual({ tasks: ['kept'] });
    await store.close();
  });

  it('refuses a file migrated by a newer version', async () => {
    const file = tempDbFile();
    await (await openSqliteStore(file)).close();
    const db = new Database(file);
    db.prepare('insert into schema_migrations (id, name, applied_at) values (?, ?, ?)').run(999, 'future', new Date().toISOString());
    db.close();
    await expect(openSqliteStore(file)).rejects.toBeInstanceOf(SchemaTooNewError);
  });

  it('at FULL (the default) fsyncs the WAL after every write transaction, off the main thread; at NORMAL never', async () => {
    const fsyncs = vi.spyOn(fs, 'fsync');
    try {
      const fullFile = tempDbFile();
      const full = await openSqliteStore(fullFile);
      const normal = await openSqliteStore(tempDbFile(), { synchronous: 'normal' });
      // SQLite itself runs at NORMAL in both: FULL's one extra fsync per commit is ours (WalFlusher).
      expect(full.db.pragma('synchronous', { simple: true })).toBe(1);
      expect(normal.db.pragma('synchronous', { simple: true })).toBe(1);
      const createdAt = new Date().toISOString();
      await normal.createAgent({ id: 'a1', machine: 'agent', machineVersion: '1', input: {}, createdAt });
      expect(fsyncs).not.toHaveBeenCalled();
      await full.createAgent({ id: 'a1', machine: 'agent', machineVersion: '1', input: {}, createdAt });
      await full.commit([{ kind: 'status', agentId: 'a1', status: 'stopped', error: null, at: createdAt }]);
      expect(fsyncs).toHaveBeenCalledTimes(2);
      const wal = fs.statSync(`${fullFile}-wal`).ino;
      for (const [fd] of fsyncs.mock.calls) expect(fs.fstatSync(fd).ino).toBe(wal);
      await full.close();
      await normal.close();
    } finally {
      fsyncs.mockRestore();
    }
  });

  it('sees what another connection to the same file committed between two of its own commits', async () => {
    const file = tempDbFile();
    const first = await openSqliteStore(file, { synchronous: 'normal' });
    // Around the writer lock (openSqliteStore would refuse a second writer), as a sqlite3 shell would.
    const second = new SqliteStore(new Database(file), file);
    const createdAt = new Date().toISOString();
    await first.createAgent({ id: 'a1', machine: 'agent', machineVersion: '1', input: {}, createdAt });
    // The first one writes (and so knows) the agent's row; the second one changes it behind its back.
    await first.commit([checkpoint('a1', 1)]);
    expect(await appendEvent(first, 'a1', { type: 'x' })).toEqual({ seq: 1, duplicate: false });
    expect(await appendEvent(second, 'a1', { type: 'y' })).toEqual({ seq: 2, duplicate: false });
    expect(await appendEvent(first, 'a1', { type: 'z' })).toEqual({ seq: 3, duplicate: false });
    await second.commit([{ kind: 'status', agentId: 'a1', status: 'stopped', error: null, at: createdAt }]);
    expect(await first.commit([checkpoint('a1', 2)])).toEqual([{ refused: expect.any(FencedError) }]);
    expect(await first.getAgent('a1')).toMatchObject({ status: 'stopped', lastSeq: 1, eventSeq: 3 });
    await first.close();
    await second.close();
  });
});

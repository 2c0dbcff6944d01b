// GET /readyz, and the writes of a store that cannot take them (issue 23), on real SQLite files:
// one deleted while serving (SQLite would go on writing into the unlinked inode, and everything
// acknowledged would be gone at the next start), and one whose connection is read-only.
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createServer } from '../../src/http/app.js';
import { openSqliteStore, SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { isIdleWithProgress, runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';
import { tempDbFile } from '../helpers/temp.js';

const startRuntime = runtimesClosedAfterEach();
const opened: SqliteStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});

function post(app: ReturnType<typeof createServer>, url: string, body: unknown) {
  return app.request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function readyz(app: ReturnType<typeof createServer>) {
  const res = await app.request('/readyz');
  return { status: res.status, body: (await res.json()) as unknown };
}

describe('GET /readyz', () => {
  it('answers 200 {"ok":true} while the store takes writes, without a token', async () => {
    const t = await startRuntime();
    const app = createServer({ runtime: t.runtime, token: 'secret' });
    expect(await readyz(app)).toEqual({ status: 200, body: { ok: true } });
    expect((await app.request('/agents')).status).toBe(401);
  });
});

describe('a database file deleted while serving', () => {
  it('is refused at once (nothing more is acknowledged), /readyz says file_gone, and moving the file back resumes', async () => {
    const t = await startRuntime({ storeRetry: { baseDelayMs: 20, maxDelayMs: 200, seed: 7 }, logs: 'captured' });
    const app = createServer({ runtime: t.runtime, logger: t.logger });
    expect((await post(app, '/agents', { machine: 'agent', id: 'before', input: { tasks: ['one'] } })).status).toBe(201);
    await waitForView(t.runtime, 'before', isIdleWithProgress(1));
    // A second name for the same file, to put it back later (the same inode: the very file opened).
    fs.linkSync(t.file, `${t.file}.kept`);
    fs.unlinkSync(t.file);

    // At once, before any probe ran: the write is checked against the file at the path.
    const spawned = await post(app, '/agents', { machine: 'agent', id: 'after', input: {} });
    expect(spawned.status).toBe(503);
    expect(spawned.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(await spawned.json()).toMatchObject({ error: { code: 'store_unavailable', reason: 'file_gone' } });
    expect(await readyz(app)).toEqual({ status: 503, body: { ok: false, reason: 'file_gone' } });
    const sent = await post(app, '/agents/before/events', { type: 'task.add', task: 'two' });
    expect(sent.status).toBe(503);
    expect(await sent.json()).toMatchObject({ error: { code: 'store_unavailable', reason: 'file_gone' } });
    expect((await app.request('/healthz')).status).toBe(200);

    // Back at its path: the probe finds it (after the backoff) and writes are taken again.
    fs.renameSync(`${t.file}.kept`, t.file);
    await vi.waitFor(async () => expect(await readyz(app)).toEqual({ status: 200, body: { ok: true } }), { timeout: 10_000, interval: 20 });
    expect((await post(app, '/agents/before/events', { type: 'task.add', task: 'two' })).status).toBe(202);
    await waitForView(t.runtime, 'before', isIdleWithProgress(2));
    expect(t.logs.filter((l) => l.msg === 'the store takes writes again')).toHaveLength(1);
  });

  it('is noticed while idle: the probe says file_gone about a second after the file went', async () => {
    const t = await startRuntime();
    const app = createServer({ runtime: t.runtime });
    expect(await readyz(app)).toEqual({ status: 200, body: { ok: true } });
    fs.unlinkSync(t.file);
    await vi.waitFor(async () => expect(await readyz(app)).toEqual({ status: 503, body: { ok: false, reason: 'file_gone' } }), {
      timeout: 10_000,
      interval: 50,
    });
  });

  it('another file put in its place is not the store: file_gone too', async () => {
    const t = await startRuntime();
    const app = createServer({ runtime: t.runtime });
    fs.renameSync(t.file, `${t.file}.moved`);
    fs.copyFileSync(`${t.file}.moved`, t.file);
    const spawned = await post(app, '/agents', { machine: 'agent', id: 'elsewhere', input: {} });
    expect(spawned.status).toBe(503);
    expect(await spawned.json()).toMatchObject({ error: { code: 'store_unavailable', reason: 'file_gone' } });
  });
});

describe('a store that cannot write its file', () => {
  // The connection SQLite gives a process that may not write the file (it opens those read-only
  // without a word). Opened read-only on purpose here, as chmod would not stop root.
  async function readOnlyStore(): Promise<SqliteStore> {
    const file = tempDbFile();
    await (await openSqliteStore(file)).close();
    const store = new SqliteStore(new Database(file, { readonly: true }), file);
    opened.push(store);
    return store;
  }

  it('is not ready (read_only) from the start, and a write gets 503 read_only, never a 500', async () => {
    const store = await readOnlyStore();
    const t = await startRuntime({ store });
    const app = createServer({ runtime: t.runtime });
    await vi.waitFor(async () => expect(await readyz(app)).toEqual({ status: 503, body: { ok: false, reason: 'read_only' } }), {
      timeout: 5_000,
      interval: 10,
    });
    const spawned = await post(app, '/agents', { machine: 'agent', id: 'a1', input: {} });
    expect(spawned.status).toBe(503);
    expect(Number(spawned.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await spawned.json()).toMatchObject({ error: { code: 'store_unavailable', reason: 'read_only' } });
    // Reads still work.
    expect((await app.request('/agents')).status).toBe(200);
  });
});

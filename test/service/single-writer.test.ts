// One `serve` per SQLite file, with real processes: a second one on a live process's file exits 1
// before it restores anything, naming the file and the holder's pid; `--read-only` serves the file
// beside it and refuses every write; a SIGKILLed holder leaves no lock; a serve that cannot listen,
// or cannot open its store, has run nothing and says why in one line.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { unprivileged } from '../helpers/permissions.js';
import { api, AUTH, killAllServers, parseLine, ROOT, serveCommand, startServer, waitForAgent, type ServeOptions, type ServerProcess } from '../helpers/server-process.js';
import { tempDir } from '../helpers/temp.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';

let fake: FakeOpenAI | undefined;

afterEach(async () => {
  await killAllServers();
  await fake?.close();
  fake = undefined;
});

/** A fake LLM that never answers: an agent that asked it stays mid-call, and a process that restored the agent would ask again. */
async function hangingLlm(): Promise<FakeOpenAI> {
  fake = await startFakeOpenAI();
  fake.setFaultPolicy(() => ({ kind: 'hang' }));
  return fake;
}

const serveOn = (db: string, extra: string[] = [], prefix: string[] = []): ServeOptions => ({ store: ['--db', db], llmUrl: fake!.url, extra, prefix });

/** Runs a `serve` that is expected to stop by itself; its exit code and what it wrote. */
async function serveUntilExit(options: ServeOptions): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const { command: [bin, ...args], env } = serveCommand(options);
  const child = spawn(bin!, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000); // it started after all: the test fails on its code
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stderr, stdout };
}

/** One line of text and no stack: what a person is shown. */
function expectOneLine(stderr: string, text: string): void {
  expect(stderr.trimEnd().split('\n')).toEqual([text]);
}

async function checkpointsOf(server: ServerProcess, id: string): Promise<unknown> {
  const res = await api(server, 'GET', `/agents/${id}/checkpoints`);
  expect(res.status).toBe(200);
  return res.body;
}

describe('one serve per SQLite file', () => {
  it('refuses a second serve before it restores anything, serves the file --read-only beside the first, and frees it when the first is SIGKILLed', { timeout: 180_000 }, async () => {
    const db = path.join(tempDir('da-single-writer-'), 'agents.db');
    const llm = await hangingLlm();
    const first = await startServer(serveOn(db));
    expect((await api(first, 'POST', '/agents', { machine: 'agent', id: 'w1', input: { tasks: ['held'] } })).status).toBe(201);
    await waitForAgent(first, 'w1', () => llm.calls.length === 1); // mid-call: a restore would call again
    const checkpoints = await checkpointsOf(first, 'w1');

    // A second serve: exit 1, one line naming the file and the first's pid, nothing restored.
    const second = await serveUntilExit(serveOn(db));
    expect(second.code).toBe(1);
    const { since } = JSON.parse(fs.readFileSync(`${db}.lock.json`, 'utf8')) as { since: string };
    expectOneLine(
      second.stderr,
      `${db} is in use: process ${first.child.pid} (running since ${since}) runs its agents, and a SQLite file has one writer. ` +
        'Stop that process first, or open this one read-only (serve --read-only; openSqliteStore(file, { readOnly: true })) to read what is stored without running anything.',
    );
    expect(second.stdout).not.toMatch(/recovered|listening/);
    expect(llm.calls).toHaveLength(1);
    expect(await checkpointsOf(first, 'w1')).toEqual(checkpoints);

    // --read-only: every read and the dashboard from the file; every write 503 read_only; nothing runs.
    const reader = await startServer(serveOn(db, ['--read-only']));
    const greeting = reader.output.map(parseLine).find((r) => String(r?.msg).startsWith('durable-agents listening'));
    expect(greeting).toMatchObject({ readOnly: true, msg: expect.stringContaining('READ-ONLY') });
    expect((await api(reader, 'GET', '/agents')).body.items.map((a: { id: string }) => a.id)).toEqual(['w1']);
    expect(await api(reader, 'GET', '/agents/w1')).toMatchObject({ status: 200, body: { id: 'w1', status: 'active', state: { callingLLM: expect.anything() } } });
    expect(await checkpointsOf(reader, 'w1')).toEqual(checkpoints);
    const page = await fetch(`${reader.url}/ui/agents/w1`, { headers: AUTH });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('w1');
    const refused = [
      await api(reader, 'POST', '/agents', { machine: 'agent', id: 'w2', input: { tasks: ['no'] } }),
      await api(reader, 'POST', '/agents/w1/events', { type: 'task.add', task: 'no' }),
    ];
    for (const res of refused) expect(res).toMatchObject({ status: 503, body: { error: { code: 'read_only' } } });
    // The writer's commits show at the reader's next read.
    expect((await api(first, 'POST', '/agents', { machine: 'agent', id: 'w3' })).status).toBe(201);
    expect((await api(reader, 'GET', '/agents')).body.items.map((a: { id: string }) => a.id)).toEqual(['w1', 'w3']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(llm.calls).toHaveLength(1);
    expect(await checkpointsOf(first, 'w1')).toEqual(checkpoints);
    expect((await api(first, 'GET', '/agents/w2')).status).toBe(404);

    // The first dies by SIGKILL: no lock is left, a new serve starts on the file and restores w1.
    first.child.kill('SIGKILL');
    await first.exit;
    const next = await startServer(serveOn(db));
    await waitForAgent(next, 'w1', () => llm.calls.length === 2);
    expect((await api(reader, 'GET', '/agents/w1')).status).toBe(200);
  });

  it('binds its port before it restores any agent: a serve that cannot listen exits 1 having run nothing', { timeout: 120_000 }, async () => {
    const db = path.join(tempDir('da-single-writer-'), 'agents.db');
    const llm = await hangingLlm();
    const first = await startServer(serveOn(db));
    expect((await api(first, 'POST', '/agents', { machine: 'agent', id: 'w1', input: { tasks: ['held'] } })).status).toBe(201);
    await waitForAgent(first, 'w1', () => llm.calls.length === 1);
    first.child.kill('SIGKILL');
    await first.exit;

    const busy = await startServer(serveOn(path.join(tempDir('da-single-writer-'), 'other.db')));
    const port = new URL(busy.url).port;
    const blocked = await serveUntilExit(serveOn(db, ['--port', port]));
    expect(blocked.code).toBe(1);
    expect(blocked.stderr).toMatch(/^Cannot listen: .*EADDRINUSE.*Pick another --port\.\n$/);
    expect(llm.calls).toHaveLength(1); // w1 was not restored: its call was not made again

    // It let the file go when it exited: the next serve runs it.
    const next = await startServer(serveOn(db));
    await waitForAgent(next, 'w1', () => llm.calls.length === 2);
  });

  it('refuses a database file it may not write with one line, and serves it --read-only', { timeout: 120_000 }, async () => {
    const db = path.join(tempDir('da-single-writer-'), 'agents.db');
    await hangingLlm();
    const setUp = await openSqliteStore(db);
    await setUp.createAgent({ id: 'kept', machine: 'agent', machineVersion: '1', input: {}, createdAt: new Date().toISOString() });
    await setUp.close();
    fs.chmodSync(db, 0o444);
    // As root, without CAP_DAC_OVERRIDE (setpriv): the mode binds either way (test/helpers/permissions.ts).
    const asUser = unprivileged();

    const refused = await serveUntilExit(serveOn(db, [], asUser));
    expect(refused.code).toBe(1);
    expectOneLine(
      refused.stderr,
      `Cannot open the store at ${db}: this process may not write the file (its permissions, or a read-only file system); ` +
        'start it with --read-only (or { readOnly: true }) to serve what it holds without writing.',
    );

    const reader = await startServer(serveOn(db, ['--read-only'], asUser));
    expect((await api(reader, 'GET', '/agents')).body.items.map((a: { id: string }) => a.id)).toEqual(['kept']);
    expect((await api(reader, 'POST', '/agents/kept/events', { type: 'task.add', task: 'x' })).status).toBe(503);
  });

  it('says in one line, naming the file, why a store cannot be opened: no stack', { timeout: 60_000 }, async () => {
    await hangingLlm();
    const notADatabase = path.join(tempDir('da-single-writer-'), 'notes.db');
    fs.writeFileSync(notADatabase, 'These are notes, not a database.\n'.repeat(200));
    const result = await serveUntilExit(serveOn(notADatabase));
    expect(result.code).toBe(1);
    expectOneLine(result.stderr, `Cannot open the store at ${notADatabase}: file is not a database.`);
  });
});

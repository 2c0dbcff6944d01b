// A kill -9 while agents wait for LLM capacity: a real `durable-agents serve` process with
// `--llm-concurrency 2` in front of a fake provider that serves 2 calls at a time (429 beyond),
// 20 agents of 2 tasks spawned over HTTP, SIGKILL once calls are queued at the gate and some tasks
// are done, a restart on the same SQLite file. Every task is done and delivered; no turn whose
// answer was committed is asked again; a turn is asked again only if its answer was not committed
// at the kill.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentView } from '../../src/runtime/views.js';
import { api, AUTH, killAllServers, startServer as startProcess, waitForAgent, type ServerProcess } from '../helpers/server-process.js';
import { tempDir } from '../helpers/temp.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { startWebhookSink, type WebhookSink } from '../support/webhook-sink.js';

let fake: FakeOpenAI | undefined;
let sink: WebhookSink | undefined;
let dir: string | undefined;

afterEach(async () => {
  await killAllServers();
  await fake?.close();
  await sink?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  fake = sink = dir = undefined;
});

const AGENTS = 20;
const CONCURRENCY = 2;
const ids = Array.from({ length: AGENTS }, (_, i) => `cap-${String(i).padStart(2, '0')}`);
const tasksOf = (id: string) => [`${id} task 1`, `${id} task 2`];

async function metric(server: ServerProcess, name: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`, { headers: AUTH })).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
}

describe('kill -9 while agents wait for LLM capacity (a real serve process)', () => {
  it('finishes every task, delivers each webhook key with one body, and asks a turn again only if its answer was not committed at the kill', { timeout: 180_000 }, async () => {
    dir = tempDir('durable-agents-capacity-');
    const db = path.join(dir, 'agents.db');
    // 150 ms a call, 2 at a time: 40 tasks take 3 s at least; the gate keeps most agents waiting.
    fake = await startFakeOpenAI({ latencyMs: 150, capacity: { concurrent: CONCURRENCY, retryAfter: '1' } });
    sink = await startWebhookSink();
    const flags = ['--db', db];
    const extra = ['--llm-concurrency', String(CONCURRENCY)];
    let server = await startProcess({ store: flags, llmUrl: fake.url, extra });

    for (const id of ids) {
      const spawned = await api(server, 'POST', '/agents', { machine: 'agent', id, input: { tasks: tasksOf(id), webhook: sink.url } });
      expect(spawned.status, id).toBe(201);
    }

    // Kill once calls wait at the gate and some tasks are delivered: some turns committed, some in
    // flight, most not asked yet.
    let queuedAtKill = 0;
    let waitingViews: string[] = [];
    for (let deadline = Date.now() + 60_000; ; ) {
      if (Date.now() > deadline) throw new Error('the run never reached a moment with calls queued and tasks done');
      queuedAtKill = await metric(server, 'durable_agents_llm_queue_depth');
      if (queuedAtKill >= 5 && sink.deliveries.length >= 6) {
        // Which agents say they wait (a view each: the run goes on meanwhile, so only for the record).
        const views = await Promise.all(ids.map(async (id) => (await api(server, 'GET', `/agents/${id}`)).body as AgentView));
        waitingViews = views.filter((v) => v.waiting === 'llm_capacity').map((v) => v.id);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    server.child.kill('SIGKILL');
    expect((await server.exit).signal).toBe('SIGKILL');
    expect(waitingViews.length, 'views said llm_capacity before the kill').toBeGreaterThan(0);
    // The line between the two lives is drawn when the second starts, not at the kill: a request the
    // first process wrote just before it died reaches the sink and the fake (in this process) a
    // moment after kill() returns (or even after its exit is seen), and belongs to the first life all
    // the same. The bytes it wrote are in this process's sockets already: a few event-loop turns read them.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const restartAt = Date.now();
    const askedBeforeKill = new Set(fake.calls.filter((c) => c.outcome !== 'fault').map((c) => c.userContent));

    server = await startProcess({ store: flags, llmUrl: fake.url, extra });
    for (const id of ids) await waitForAgent(server, id, (v) => v.state === 'idle' && v.progress === 2, 90_000);

    // Each task's one answer was delivered under its key; a key delivered twice was being delivered
    // at the kill (its result not committed): once before, once after, with the same body.
    const byKey = sink.byKey();
    const expected = ids.flatMap((id) => tasksOf(id).map((task, i) => ({ key: `${id}:${i + 1}`, task })));
    expect([...byKey.keys()].sort()).toEqual(expected.map((e) => e.key).sort());
    let redelivered = 0;
    for (const { key, task } of expected) {
      const deliveries = byKey.get(key)!;
      expect(new Set(deliveries.map((d) => d.rawBody)).size, key).toBe(1);
      expect(deliveries[0]!.body).toMatchObject({ task, response: `answer: ${task}` });
      expect(deliveries.filter((d) => d.at < restartAt).length, key).toBeLessThanOrEqual(1);
      expect(deliveries.filter((d) => d.at > restartAt).length, key).toBeLessThanOrEqual(1);
      if (deliveries.length > 1) redelivered++;
    }

    // LLM calls per task (each task is one turn: no tools). A call refused with 429 for the
    // provider's capacity was not answered and is not counted; the gate asks it again.
    const committedBeforeKill = new Set<string>();
    for (const id of ids) {
      const items = (await api(server, 'GET', `/agents/${id}/checkpoints`)).body.items as { seq: number; state: unknown; createdAt: string }[];
      for (const cp of items.filter((c) => c.state === 'persisted' && Date.parse(c.createdAt) < restartAt)) {
        const full = (await api(server, 'GET', `/agents/${id}/checkpoints/${cp.seq}`)).body;
        committedBeforeKill.add(full.snapshot.context.current.task as string);
      }
    }
    let askedAgain = 0;
    let neverAskedBeforeKill = 0;
    for (const { task } of expected) {
      const asked = fake.calls.filter((c) => c.userContent === task && c.outcome !== 'fault');
      const before = asked.filter((c) => c.at < restartAt);
      const after = asked.filter((c) => c.at > restartAt);
      // One asking per process life at most: the gate never asks a waiting turn twice.
      expect(before.length, `${task} before the kill`).toBeLessThanOrEqual(1);
      expect(after.length, `${task} after the restart`).toBeLessThanOrEqual(1);
      // A committed answer is never asked for again; an uncommitted one is asked exactly once more.
      if (committedBeforeKill.has(task)) expect(after, `${task} was asked again after its answer was committed`).toEqual([]);
      else expect(after.length, `${task} asked after the restart`).toBe(1);
      if (before.length === 1 && after.length === 1) askedAgain++;
      if (before.length === 0) neverAskedBeforeKill++;
    }
    // The kill found turns committed and turns not asked yet (waiting for capacity, or queued behind them).
    expect(committedBeforeKill.size).toBeGreaterThan(0);
    expect(neverAskedBeforeKill).toBeGreaterThan(0);
    for (const task of committedBeforeKill) expect(askedBeforeKill.has(task), task).toBe(true);
    // Asked again: exactly the turns asked before the kill whose answers were not committed then.
    expect(askedAgain).toBe(askedBeforeKill.size - committedBeforeKill.size);
    // And those are few: the gate lets 2 calls run at once, and frees a slot when an answer
    // arrives, before its commit (a few ms, against 150 ms a call): per slot, one call at the
    // provider and at most one answer being committed at the kill.
    expect(askedAgain).toBeLessThanOrEqual(2 * CONCURRENCY);
    console.log(
      `capacity-crash: queued at kill ${queuedAtKill}, views waiting ${waitingViews.length}, committed before kill ${committedBeforeKill.size}/40, ` +
        `never asked before kill ${neverAskedBeforeKill}, asked again ${askedAgain}, webhooks redelivered ${redelivered}, 429s ${fake.load.refused}`,
    );

    server.child.kill('SIGTERM');
    expect(await server.exit).toEqual({ code: 0, signal: null });
  });
});

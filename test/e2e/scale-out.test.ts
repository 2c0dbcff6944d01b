// Scale-out: several real `serve` processes share one Postgres database. Any process takes any
// request, each agent runs in one process at a time (its lease), and when a process dies (SIGKILL)
// or leaves (SIGTERM), the others take its agents over from their last checkpoint.
import { afterEach, describe, expect, it } from 'vitest';
import { freshSchema, postgresUrl } from '../helpers/postgres.js';
import type { AgentView } from '../../src/runtime/views.js';
import { api, AUTH, killAllServers, startServer, waitForAgent, type ServerProcess } from '../helpers/server-process.js';
import { sseReader } from '../http/harness.js';
import { sleep } from './crash-harness.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { startWebhookSink, type WebhookSink } from '../support/webhook-sink.js';

let fake: FakeOpenAI | undefined;
let sink: WebhookSink | undefined;

afterEach(async () => {
  await killAllServers();
  await fake?.close();
  await sink?.close();
  fake = sink = undefined;
});

/** `count` processes on one fresh schema. */
async function startCluster(count: number, leaseMs: number): Promise<ServerProcess[]> {
  const url = `${postgresUrl}?schema=${freshSchema()}`;
  const start = () => startServer({ store: ['--database-url', url], llmUrl: fake!.url, extra: ['--lease-ms', String(leaseMs)] });
  // One first: it creates the schema; the others then start together.
  const first = await start();
  return [first, ...(await Promise.all(Array.from({ length: count - 1 }, start)))];
}

const tasksOf = (id: string, n: number) => Array.from({ length: n }, (_, i) => `${id} task ${i + 1}`);

/** Guarantee 3 for these agents: one webhook key per task processed, each always with the same body. */
function expectOneKeyPerTask(expected: Map<string, string[]>): void {
  const byKey = sink!.byKey();
  const keys = [...expected].flatMap(([id, tasks]) => tasks.map((task, i) => ({ key: `${id}:${i + 1}`, task })));
  expect([...byKey.keys()].sort()).toEqual(keys.map((k) => k.key).sort());
  for (const { key, task } of keys) {
    const deliveries = byKey.get(key)!;
    expect(new Set(deliveries.map((d) => d.rawBody)).size, key).toBe(1);
    expect(deliveries[0]!.body).toMatchObject({ task, response: `answer: ${task}` });
  }
}

describe('scale-out on Postgres (real processes)', () => {
  it('takes requests in any process and finishes a SIGKILLed process\'s agents in the others', { timeout: 120_000 }, async () => {
    // Slow enough answers that the victim's agents still have work left when it is killed.
    fake = await startFakeOpenAI({ latencyMs: 300 });
    sink = await startWebhookSink();
    const servers = await startCluster(3, 2000);
    const expected = new Map<string, string[]>();

    // Spawned round-robin: each process owns the agents it spawned.
    for (let i = 0; i < 9; i++) {
      const id = `so-${i}`;
      // Enough tasks that a loaded machine's slow spawns cannot let an agent finish before the kill (the check below says so).
      const tasks = tasksOf(id, 10);
      expected.set(id, tasks);
      const spawned = await api(servers[i % 3]!, 'POST', '/agents', { machine: 'agent', id, input: { tasks, webhook: sink.url } });
      expect(spawned.status, id).toBe(201);
    }
    // Events through a process that does not run the agent: committed there, delivered by its owner.
    for (const [id, tasks] of expected) {
      const via = servers[(Number(id.slice(3)) + 1) % 3]!;
      for (const task of [`${id} extra 1`, `${id} extra 2`]) {
        const sent = await api(via, 'POST', `/agents/${id}/events`, { type: 'task.add', task }, { 'idempotency-key': task });
        expect(sent.status, task).toBe(202);
        tasks.push(task);
      }
    }
    // The same Idempotency-Key through yet another process is the same event.
    const replay = await api(servers[2]!, 'POST', '/agents/so-0/events', { type: 'task.add', task: 'so-0 extra 1' }, { 'idempotency-key': 'so-0 extra 1' });
    expect(replay).toEqual({ status: 202, body: { seq: 1 } });

    // Kill the first process mid-run: its agents (so-0, so-3, so-6) have work left.
    const victim = await waitForAgent(servers[0]!, 'so-0', (v) => v.progress >= 1);
    expect(victim.progress, 'so-0 still has work when its process is killed').toBeLessThan(expected.get('so-0')!.length);
    servers[0]!.child.kill('SIGKILL');
    expect((await servers[0]!.exit).signal).toBe('SIGKILL');
    const left = await Promise.all(['so-0', 'so-3', 'so-6'].map(async (id) => (await api(servers[1]!, 'GET', `/agents/${id}`)).body.progress as number));
    expect(left.some((progress, i) => progress < expected.get(`so-${i * 3}`)!.length), 'killed mid-run').toBe(true);

    // Every agent, the victim's included, finishes every acknowledged task, seen from any live process.
    for (const [id, tasks] of expected) {
      await waitForAgent(servers[1]!, id, (v) => v.state === 'idle' && v.progress === tasks.length, 60_000);
      expect((await api(servers[2]!, 'GET', `/agents/${id}`)).body).toMatchObject({ progress: tasks.length, state: 'idle' });
    }
    expectOneKeyPerTask(expected);
    for (const tasks of expected.values()) {
      for (const task of tasks) {
        // Called once, or twice at most when the kill cut its call (or its commit) short.
        expect(fake.callsFor(task).length, task).toBeGreaterThanOrEqual(1);
        expect(fake.callsFor(task).length, task).toBeLessThanOrEqual(2);
      }
    }
    const log = servers.slice(1).flatMap((s) => s.output).join('\n');
    expect(log).toContain('lease taken');
  });

  it('hands a stopping process\'s agents over at once (SIGTERM), without waiting for its lease to run out', { timeout: 90_000 }, async () => {
    fake = await startFakeOpenAI({ latencyMs: 100 });
    sink = await startWebhookSink();
    // A lease far longer than this test: only the leaving process's resignation can free its agents.
    const [leaving, staying] = await startCluster(2, 600_000);
    const tasks = tasksOf('handover', 5);
    expect((await api(leaving!, 'POST', '/agents', { machine: 'agent', id: 'handover', input: { tasks, webhook: sink.url } })).status).toBe(201);
    await waitForAgent(leaving!, 'handover', (v) => v.progress >= 1);

    leaving!.child.kill('SIGTERM');
    expect(await leaving!.exit).toEqual({ code: 0, signal: null });
    // The staying process adopts it on its next lease tick... which, with this lease, is minutes away:
    // an event makes it claim the agent now.
    expect((await api(staying!, 'POST', '/agents/handover/events', { type: 'task.add', task: 'handover extra' })).status).toBe(202);
    tasks.push('handover extra');
    await waitForAgent(staying!, 'handover', (v) => v.state === 'idle' && v.progress === tasks.length, 30_000);
    expectOneKeyPerTask(new Map([['handover', tasks]]));
  });

  it('lets any process stop an agent that another one runs', { timeout: 60_000 }, async () => {
    fake = await startFakeOpenAI({ latencyMs: 20 });
    sink = await startWebhookSink();
    const [owner, other] = await startCluster(2, 2000);
    expect((await api(owner!, 'POST', '/agents', { machine: 'agent', id: 'stoppable', input: {} })).status).toBe(201);
    await waitForAgent(owner!, 'stoppable', (v) => v.state === 'idle');

    expect((await api(other!, 'DELETE', '/agents/stoppable')).status).toBe(204);
    // The owner learns of it and no longer shows (or runs) its own copy as active.
    await waitForAgent(owner!, 'stoppable', (v) => v.status === 'stopped', 10_000);
    expect((await api(owner!, 'POST', '/agents/stoppable/events', { type: 'task.add', task: 'too late' })).status).toBe(409);
  });

  it('streams every transition of an agent that another process runs, to its end', { timeout: 60_000 }, async () => {
    fake = await startFakeOpenAI({ latencyMs: 50 });
    sink = await startWebhookSink();
    const [owner, other] = await startCluster(2, 2000);
    expect((await api(owner!, 'POST', '/agents', { machine: 'agent', id: 'watched', input: { webhook: sink.url } })).status).toBe(201);
    await waitForAgent(owner!, 'watched', (v) => v.state === 'idle');

    const res = await fetch(`${other!.url}/agents/watched/stream`, { headers: AUTH });
    const stream = sseReader(res);
    const views: AgentView[] = [];
    const tokens: { seq: number; turn: number; delta: string; index: number }[] = [];
    const readUntil = async (stop: (v: AgentView) => boolean) => {
      for (;;) {
        const event = await stream.next();
        if (!event) throw new Error(`the stream ended early after ${JSON.stringify(views.map((v) => v.state))}`);
        if (event.event === 'token') {
          tokens.push(JSON.parse(event.data) as (typeof tokens)[number]);
          continue;
        }
        expect(event.event).toBe('snapshot');
        const view = JSON.parse(event.data) as AgentView;
        views.push(view);
        if (stop(view)) return;
      }
    };
    await readUntil(() => true); // the view when the stream opened
    for (const task of ['first', 'second']) {
      expect((await api(owner!, 'POST', '/agents/watched/events', { type: 'task.add', task })).status).toBe(202);
    }
    await readUntil((v) => v.state === 'idle' && v.progress === 2);
    // Relayed text travels apart from the checkpoints (NOTIFY from another connection, every 20 ms):
    // on a loaded machine the last call's tokens may come after the snapshots that follow it. Read on
    // until both answers are whole, for a few seconds at most.
    const text = (seq: number) => tokens.filter((t) => t.seq === seq).map((t) => t.delta).join('');
    for (const deadline = Date.now() + 5_000; Date.now() < deadline && (text(1) !== 'answer: first' || text(2) !== 'answer: second'); ) {
      const event = await Promise.race([stream.next(), sleep(deadline - Date.now()).then(() => null)]);
      if (event === null) break;
      if (!event) throw new Error('the stream ended early');
      if (event.event === 'token') tokens.push(JSON.parse(event.data) as (typeof tokens)[number]);
    }
    // One view per transition, in order, though they were committed in the other process: the views
    // after the first are the checkpoints written since, one for one.
    const shown = (v: { state: unknown; progress: number }) => `${JSON.stringify(v.state)}@${v.progress}`;
    const checkpoints = (await api(other!, 'GET', '/agents/watched/checkpoints')).body.items as { state: unknown; progress: number }[];
    const since = checkpoints.slice(-views.length);
    expect(views.map(shown)).toEqual(since.map(shown));
    const states = new Set(views.map((v) => (typeof v.state === 'string' ? v.state : Object.keys(v.state as object)[0])));
    expect([...states]).toEqual(expect.arrayContaining(['idle', 'callingLLM', 'persisted', 'sideEffect']));
    // The LLM calls' text too, relayed from the owner (NOTIFY, batched every 20 ms): each answer whole, in order.
    for (const [i, task] of ['first', 'second'].entries()) {
      const ofTask = tokens.filter((t) => t.seq === i + 1);
      expect(ofTask.map((t) => t.index)).toEqual(ofTask.map((_, n) => n));
      expect(ofTask.map((t) => t.delta).join('')).toBe(`answer: ${task}`);
    }

    // Stopped from the owner: the stream in the other process shows it and ends.
    expect((await api(owner!, 'DELETE', '/agents/watched')).status).toBe(204);
    await readUntil((v) => v.status === 'stopped');
    expect(await stream.next()).toBeUndefined();
  });
});

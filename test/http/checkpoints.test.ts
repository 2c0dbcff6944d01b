import { afterEach, describe, expect, it } from 'vitest';
import type { AgentView } from '../../src/runtime/views.js';
import { getJson, isIdleWith, postJson, readJson, spawn, testApp, waitForView, type TestApp } from './harness.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let t: TestApp;
afterEach(async () => {
  await t?.close();
});

/** An agent that has done one task: idle → callingLLM → persisted → sideEffect → idle. */
async function agentWithOneTask(id = 'c1') {
  await spawn(t.app, id, { tasks: ['summarize'] });
  await waitForView(t.app, id, isIdleWith(1));
}

describe('GET /agents/:id/checkpoints', () => {
  it('lists one item per committed transition, oldest first', async () => {
    t = await testApp();
    await agentWithOneTask();
    const { status, body } = await getJson(t.app, '/agents/c1/checkpoints');
    expect(status).toBe(200);
    const items = body.items as { seq: number; state: unknown; progress: number; createdAt: string; eventType: string }[];
    expect(items.map((i) => i.seq)).toEqual(items.map((_, n) => n + 1));
    expect(items[0]).toMatchObject({ seq: 1, eventType: 'xstate.init', progress: 0 });
    expect(items.map((i) => (typeof i.state === 'string' ? i.state : Object.keys(i.state as object)[0]))).toEqual(
      expect.arrayContaining(['callingLLM', 'persisted', 'sideEffect', 'idle']),
    );
    expect(items.at(-1)).toMatchObject({ state: 'idle', progress: 1 });
    for (const item of items) {
      expect(item.createdAt).toMatch(ISO_MS);
      expect(Object.keys(item)).toEqual(expect.arrayContaining(['seq', 'state', 'progress', 'createdAt']));
    }
    const times = items.map((i) => i.createdAt);
    expect([...times].sort()).toEqual(times);
  });

  it('says what the retention policy pruned, and answers 410 checkpoint_pruned for reading or forking a pruned checkpoint', async () => {
    t = await testApp({ retention: { keepCheckpoints: 2, everyMs: 3_600_000 } });
    await agentWithOneTask();
    expect((await getJson(t.app, '/agents/c1/checkpoints')).body.prunedBefore).toBe(0);
    await t.runtime.prune();
    const { body } = await getJson(t.app, '/agents/c1/checkpoints');
    const items = body.items as { seq: number }[];
    expect(body.prunedBefore).toBe(items[0]!.seq);
    expect(items.length).toBeGreaterThanOrEqual(2);
    const pruned = await getJson(t.app, '/agents/c1/checkpoints/1');
    expect(pruned.status).toBe(410);
    expect(pruned.body).toMatchObject({ error: { code: 'checkpoint_pruned', message: expect.stringContaining(`the oldest kept is ${String(body.prunedBefore)}`) } });
    const fork = await postJson(t.app, '/agents/c1/fork', { checkpoint: 1 });
    expect(fork.status).toBe(410);
    expect((await getJson(t.app, `/agents/c1/checkpoints/${String(body.prunedBefore)}`)).status).toBe(200);
    // A seq never written is still a 404.
    expect((await getJson(t.app, '/agents/c1/checkpoints/999')).status).toBe(404);
  });

  it('answers 404 for an unknown agent and 400 invalid_id for a malformed id', async () => {
    t = await testApp();
    expect((await getJson(t.app, '/agents/nope/checkpoints')).status).toBe(404);
    const bad = await getJson(t.app, `/agents/${'x'.repeat(129)}/checkpoints`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_id');
  });
});

describe('GET /agents/:id/checkpoints/:seq', () => {
  it('returns the persisted snapshot whole, with the checkpoint metadata beside it', async () => {
    t = await testApp();
    await agentWithOneTask();
    const { status, body } = await getJson(t.app, '/agents/c1/checkpoints/2');
    expect(status).toBe(200);
    const stored = await t.store.getCheckpoint('c1', 2);
    expect(body).toEqual({
      agentId: 'c1',
      seq: 2,
      machineVersion: '3',
      eventType: stored!.eventType,
      state: stored!.state,
      status: 'active',
      progress: stored!.progress,
      createdAt: stored!.createdAt,
      snapshot: JSON.parse(stored!.snapshot),
    });
    expect(body.snapshot).toMatchObject({ status: 'active', value: body.state, context: { current: { task: 'summarize' } } });
  });

  it('answers 404 for a checkpoint or agent that does not exist, and 400 for a malformed seq', async () => {
    t = await testApp();
    await agentWithOneTask();
    const missing = await getJson(t.app, '/agents/c1/checkpoints/999');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toEqual({ code: 'not_found', message: 'No checkpoint with id "c1@999".' });
    const noAgent = await getJson(t.app, '/agents/ghost/checkpoints/1');
    expect(noAgent.body.error).toEqual({ code: 'not_found', message: 'No agent with id "ghost".' });
    for (const seq of ['0', '-1', '1.5', 'abc', '1e3', '99999999999999999999']) {
      const bad = await getJson(t.app, `/agents/c1/checkpoints/${seq}`);
      expect(bad.status, seq).toBe(400);
      expect(bad.body.error.code).toBe('invalid_input');
    }
  });
});

describe('POST /agents/:id/fork', () => {
  it('answers 201 with a new agent restored from the checkpoint, which then runs on', async () => {
    t = await testApp();
    await agentWithOneTask();
    const persisted = (await t.store.listCheckpoints('c1')).find((c) => c.state === 'persisted')!;
    const res = await postJson(t.app, '/agents/c1/fork', { checkpoint: persisted.seq, id: 'c1-fork' });
    expect(res.status).toBe(201);
    const view = (await readJson(res)) as AgentView;
    expect(view).toMatchObject({ id: 'c1-fork', machine: 'agent', status: 'active' });
    // It resumes from "persisted": the side effect runs, the task completes in the fork too.
    await waitForView(t.app, 'c1-fork', isIdleWith(1));
    expect((await getJson(t.app, '/agents/c1')).body.progress).toBe(1);
  });

  it('generates the new id when none is given', async () => {
    t = await testApp();
    await agentWithOneTask();
    const res = await postJson(t.app, '/agents/c1/fork', { checkpoint: 1 });
    expect(res.status).toBe(201);
    const { id } = (await readJson(res)) as AgentView;
    expect(id).not.toBe('c1');
    expect((await getJson(t.app, `/agents/${id}`)).status).toBe(200);
  });

  it('answers 409 when the new id is taken, 404 for an unknown checkpoint, 400 for a bad body', async () => {
    t = await testApp();
    await agentWithOneTask();
    await spawn(t.app, 'other');
    const taken = await postJson(t.app, '/agents/c1/fork', { checkpoint: 1, id: 'other' });
    expect(taken.status).toBe(409);
    expect((await readJson(taken)).error.code).toBe('conflict');
    const missing = await postJson(t.app, '/agents/c1/fork', { checkpoint: 999, id: 'new' });
    expect(missing.status).toBe(404);
    const noAgent = await postJson(t.app, '/agents/ghost/fork', { checkpoint: 1 });
    expect(noAgent.status).toBe(404);
    for (const [body, code] of [
      [{ checkpoint: '1' }, 'invalid_input'],
      [{ checkpoint: 0 }, 'invalid_input'],
      [{}, 'invalid_input'],
      [{ checkpoint: 1, id: 'bad id' }, 'invalid_id'],
      [{ checkpoint: 1, extra: true }, 'invalid_input'],
    ] as const) {
      const res = await postJson(t.app, '/agents/c1/fork', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await readJson(res)).error.code).toBe(code);
    }
    expect((await t.store.listAgents({ limit: 10 })).items.map((a) => a.id)).toEqual(['c1', 'other']);
  });
});

describe('GET /agents/:id/actions', () => {
  it('lists the logged calls with their payload and result', async () => {
    t = await testApp();
    await agentWithOneTask();
    const { status, body } = await getJson(t.app, '/agents/c1/actions');
    expect(status).toBe(200);
    expect(body.items.map((a: { action: string }) => a.action)).toEqual(['callLlm', 'runSideEffect']);
    const [llm] = body.items;
    expect(Object.keys(llm).sort()).toEqual(['action', 'createdAt', 'payload', 'result', 'seq']);
    expect(llm.payload).toMatchObject({ input: { messages: [{ role: 'user', content: 'summarize' }] } });
    expect(llm.result).toMatchObject({ ok: true, output: { content: expect.stringContaining('summarize'), toolCalls: [] } });
    expect(llm.createdAt).toMatch(ISO_MS);
  });

  it('answers 404 for an unknown agent', async () => {
    t = await testApp();
    expect((await getJson(t.app, '/agents/ghost/actions')).status).toBe(404);
  });
});

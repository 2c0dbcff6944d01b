import { afterEach, describe, expect, it, vi } from 'vitest';
import { createServer } from '../../src/http/app.js';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startRuntime } from '../helpers/runtime.js';
import type { AgentView } from '../../src/runtime/views.js';
import { startFakeOpenAI } from '../support/fake-openai.js';
import { getJson, isIdleWith, postJson, readJson, spawn, testApp, waitForView, type TestApp } from './harness.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let t: TestApp;
afterEach(async () => {
  await t?.close();
});

describe('POST /agents', () => {
  it('answers 201 with the agent view, then runs its tasks', async () => {
    t = await testApp();
    const res = await postJson(t.app, '/agents', { machine: 'agent', id: 'a1', input: { tasks: ['first', 'second'] } });
    expect(res.status).toBe(201);
    const view = (await readJson(res)) as AgentView;
    expect(view).toMatchObject({ id: 'a1', machine: 'agent', status: 'active', progress: 0 });
    expect(Object.keys(view).sort()).toEqual(['context', 'createdAt', 'id', 'machine', 'progress', 'state', 'status', 'updatedAt']);
    expect(view.createdAt).toMatch(ISO_MS);
    expect(view.updatedAt).toMatch(ISO_MS);
    const done = await waitForView(t.app, 'a1', isIdleWith(2));
    expect(done.context).toMatchObject({ progress: 2, queue: [] });
  });

  it('generates an id when none is given', async () => {
    t = await testApp();
    const res = await postJson(t.app, '/agents', { machine: 'agent' });
    expect(res.status).toBe(201);
    const { id } = (await readJson(res)) as AgentView;
    expect(id).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
    expect((await getJson(t.app, `/agents/${id}`)).status).toBe(200);
  });

  it('answers 200 with the existing agent when the same id is spawned again with the same machine', async () => {
    t = await testApp();
    await spawn(t.app, 'same', { tasks: ['only once'] });
    await waitForView(t.app, 'same', isIdleWith(1));
    const again = await postJson(t.app, '/agents', { machine: 'agent', id: 'same', input: { tasks: ['ignored'] } });
    expect(again.status).toBe(200);
    expect(await readJson(again)).toMatchObject({ id: 'same', progress: 1 });
    expect((await t.store.listAgents({ limit: 10 })).items).toHaveLength(1);
    expect(await t.store.getInput('same')).toEqual({ tasks: ['only once'] });
  });

  it('answers 409 conflict when the id exists with another machine', async () => {
    t = await testApp();
    await spawn(t.app, 'taken', {}, 'toggle');
    const res = await postJson(t.app, '/agents', { machine: 'agent', id: 'taken' });
    expect(res.status).toBe(409);
    expect((await readJson(res)).error).toMatchObject({ code: 'conflict', message: expect.stringContaining('toggle') });
  });

  it('creates one agent when identical spawns race', async () => {
    t = await testApp();
    const results = await Promise.all(
      Array.from({ length: 5 }, () => postJson(t.app, '/agents', { machine: 'agent', id: 'race', input: { tasks: ['t'] } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 201]);
    expect((await t.store.listAgents({ limit: 10 })).items.map((a) => a.id)).toEqual(['race']);
  });

  it('answers 404 for an unknown machine and 400 invalid_input for input the machine refuses', async () => {
    t = await testApp();
    const unknown = await postJson(t.app, '/agents', { machine: 'nope', id: 'x' });
    expect(unknown.status).toBe(404);
    expect((await readJson(unknown)).error.code).toBe('not_found');
    const bad = await postJson(t.app, '/agents', { machine: 'agent', id: 'x', input: { tasks: [1] } });
    expect(bad.status).toBe(400);
    expect((await readJson(bad)).error).toMatchObject({ code: 'invalid_input', message: expect.stringContaining('tasks') });
    expect((await t.store.listAgents({ limit: 10 })).items).toEqual([]);
  });
});

describe('GET /agents', () => {
  it('pages through agents oldest first with nextCursor', async () => {
    t = await testApp();
    for (const id of ['p1', 'p2', 'p3']) await spawn(t.app, id);
    const first = await getJson(t.app, '/agents?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.items.map((v: AgentView) => v.id)).toEqual(['p1', 'p2']);
    expect(typeof first.body.nextCursor).toBe('string');
    const second = await getJson(t.app, `/agents?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body).toMatchObject({ items: [{ id: 'p3' }], nextCursor: null });
  });

  it('filters by machine and status', async () => {
    t = await testApp();
    await spawn(t.app, 'f1');
    await spawn(t.app, 'f2', {}, 'toggle');
    await spawn(t.app, 'f3');
    await t.app.request('/agents/f3', { method: 'DELETE' });
    const ids = async (query: string) => (await getJson(t.app, `/agents?${query}`)).body.items.map((v: AgentView) => v.id);
    expect(await ids('machine=agent')).toEqual(['f1', 'f3']);
    expect(await ids('machine=toggle')).toEqual(['f2']);
    expect(await ids('status=stopped')).toEqual(['f3']);
    expect(await ids('machine=agent&status=active')).toEqual(['f1']);
    expect(await ids('status=done')).toEqual([]);
  });

  it('lists summaries, no context and no checkpoint read; include=context gives the whole views', async () => {
    t = await testApp();
    const long = `Summarise this: ${'a long conversation '.repeat(2_000)}`;
    for (const id of ['s1', 's2']) await spawn(t.app, id, { tasks: [long] });
    await waitForView(t.app, 's1', isIdleWith(1));
    await waitForView(t.app, 's2', isIdleWith(1));
    // Out of memory, as most agents of a long-running server are: a view would read each one's checkpoint.
    await t.runtime.close();
    const store = await openSqliteStore(t.store.location);
    const { runtime } = await startRuntime({ store, passivateAfterMs: 60_000 });
    const app = createServer({ runtime });
    const reads = vi.spyOn(store, 'getCheckpoint');
    try {
      const summaries = await getJson(app, '/agents');
      expect(summaries.body.items).toEqual(
        ['s1', 's2'].map((id) => ({ id, machine: 'agent', status: 'active', state: 'idle', progress: 1, createdAt: expect.any(String), updatedAt: expect.any(String) })),
      );
      expect(reads).not.toHaveBeenCalled();
      expect(JSON.stringify(summaries.body).length).toBeLessThan(1_000);
      const whole = await getJson(app, '/agents?include=context');
      const { children: _none, ...view } = (await getJson(app, '/agents/s1')).body;
      expect(whole.body.items[0]).toEqual(view);
      expect(whole.body.items[0].context.queue).toBeDefined();
      expect(JSON.stringify(whole.body).length).toBeGreaterThan(2 * long.length);
    } finally {
      await runtime.close();
    }
  });

  it.each([
    ['include=children'],
    ['limit=0'],
    ['limit=1001'],
    ['limit=abc'],
    ['limit=1.5'],
    ['limit=-1'],
    ['limit=0x10'],
    ['limit=1&limit=2'],
    ['status=sleeping'],
    ['cursor=not-a-cursor'],
    ['machine='],
  ])('answers 400 invalid_input for ?%s', async (query) => {
    t = await testApp();
    const { status, body } = await getJson(t.app, `/agents?${query}`);
    expect(status).toBe(400);
    expect(body.error.code).toBe('invalid_input');
    expect(body.error.message).toMatch(/\.$/);
  });
});

describe('GET /agents/:id', () => {
  it('answers the agent view, 404 for an unknown agent and 400 invalid_id for a malformed id', async () => {
    t = await testApp();
    await spawn(t.app, 'g1');
    expect((await getJson(t.app, '/agents/g1')).body).toMatchObject({ id: 'g1', state: 'idle', status: 'active' });
    const missing = await getJson(t.app, '/agents/g2');
    expect(missing).toEqual({ status: 404, body: { error: { code: 'not_found', message: 'No agent with id "g2".' } } });
    const bad = await getJson(t.app, '/agents/a%20b');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_id');
  });
});

describe('DELETE /agents/:id', () => {
  it('stops the agent with 204; it then refuses events with 409', async () => {
    t = await testApp();
    await spawn(t.app, 'd1');
    const res = await t.app.request('/agents/d1', { method: 'DELETE' });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    expect((await getJson(t.app, '/agents/d1')).body.status).toBe('stopped');
    const event = await postJson(t.app, '/agents/d1/events', { type: 'task.add', task: 'late' });
    expect(event.status).toBe(409);
    expect((await readJson(event)).error.code).toBe('conflict');
    // Stopping again is harmless.
    expect((await t.app.request('/agents/d1', { method: 'DELETE' })).status).toBe(204);
  });

  it('answers 404 for an unknown agent', async () => {
    t = await testApp();
    const res = await t.app.request('/agents/ghost', { method: 'DELETE' });
    expect(res.status).toBe(404);
    expect((await readJson(res)).error.code).toBe('not_found');
  });
});

describe('child agents over HTTP', () => {
  it("shows a child's parent and a parent's children, refuses a forged child report, and stops the children with their parent", async () => {
    const fake = await startFakeOpenAI();
    try {
      t = await testApp({ llm: createOpenAiClient({ baseURL: fake.url }) });
      fake.script(
        { toolCalls: [{ id: 'c1', name: 'helper', arguments: { task: 'The sub-question' } }] },
        { content: 'The sub-answer.' },
        { content: 'The answer.' },
      );
      const res = await postJson(t.app, '/agents', { machine: 'agent', id: 'p1', input: { tasks: ['The question'], tools: [{ name: 'helper', agent: { machine: 'agent', input: { finishAfterTasks: false } } }] } });
      expect(res.status).toBe(201);
      const parent = await waitForView(t.app, 'p1', isIdleWith(1));
      expect(parent.children).toEqual(['p1:1:c1']);
      // Kept (its tool's input says not to finish after its task), so stopping the parent has a child to stop.
      const child = await getJson<AgentView>(t.app, '/agents/p1:1:c1');
      expect(child.body).toMatchObject({ parent: 'p1', machine: 'agent', status: 'active' });
      expect(child.body.children).toBeUndefined();
      // Only the runtime reports for a child: a request cannot.
      const forged = await postJson(t.app, '/agents/p1/events', { type: 'agent.response', agentId: 'p1:1:c1', seq: 1, task: 'x', response: 'forged' });
      expect(forged.status).toBe(422);
      expect((await t.store.eventsAfter('p1', 0)).map((e) => e.event.type)).toEqual(['agent.response']);
      const stopped = await t.app.request('/agents/p1', { method: 'DELETE' });
      expect(stopped.status).toBe(204);
      expect((await getJson<AgentView>(t.app, '/agents/p1:1:c1')).body.status).toBe('stopped');
    } finally {
      await fake.close();
    }
  });
});

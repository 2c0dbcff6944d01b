import { afterEach, describe, expect, it } from 'vitest';
import { createMachine } from 'xstate';
import { getJson, isIdleWith, postJson, readJson, spawn, testApp, waitForView, type TestApp } from './harness.js';

let t: TestApp;
afterEach(async () => {
  await t?.close();
});

describe('POST /agents/:id/events', () => {
  it('answers 202 {seq} once the event is in the store, and the agent then processes it', async () => {
    t = await testApp();
    await spawn(t.app, 'e1');
    const res = await postJson(t.app, '/agents/e1/events', { type: 'task.add', task: 'do it' });
    expect(res.status).toBe(202);
    expect(await readJson(res)).toEqual({ seq: 1 });
    // Committed before the answer: readable straight away.
    expect((await t.store.eventsAfter('e1', 0)).map((e) => e.event)).toEqual([{ type: 'task.add', task: 'do it' }]);
    await waitForView(t.app, 'e1', isIdleWith(1));
    const second = await postJson(t.app, '/agents/e1/events', { type: 'finish' });
    expect(await readJson(second)).toEqual({ seq: 2 });
    await waitForView(t.app, 'e1', (v) => v.status === 'done' && v.state === 'done');
  });

  it('answers the same 202 {seq} for the same Idempotency-Key and stores one event', async () => {
    t = await testApp();
    await spawn(t.app, 'e2');
    const send = () => postJson(t.app, '/agents/e2/events', { type: 'task.add', task: 'once' }, { 'Idempotency-Key': 'key-1' });
    const first = await send();
    const again = await send();
    expect([first.status, again.status]).toEqual([202, 202]);
    expect(await readJson(first)).toEqual({ seq: 1 });
    expect(await readJson(again)).toEqual({ seq: 1 });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const racing = await Promise.all(
      Array.from({ length: 5 }, () =>
        postJson(t.app, '/agents/e2/events', { type: 'task.add', task: 'race' }, { 'idempotency-key': 'key-2' }),
      ),
    );
    expect(new Set(await Promise.all(racing.map(async (r) => `${r.status}:${JSON.stringify(await readJson(r))}`)))).toEqual(
      new Set(['202:{"seq":2}']),
    );
    expect(await t.store.eventsAfter('e2', 0)).toHaveLength(2);
    await waitForView(t.app, 'e2', isIdleWith(2));
  });

  it('answers 422 idempotency_key_reused for the same Idempotency-Key with another body, and stores nothing for it', async () => {
    t = await testApp();
    await spawn(t.app, 'e3');
    const send = (body: unknown) => postJson(t.app, '/agents/e3/events', body, { 'Idempotency-Key': 'key-1' });
    expect(await readJson(await send({ type: 'task.add', task: 'first' }))).toEqual({ seq: 1 });
    for (const other of [{ type: 'task.add', task: 'second' }, { type: 'finish' }]) {
      const res = await send(other);
      expect(res.status).toBe(422);
      expect((await readJson(res)).error).toMatchObject({ code: 'idempotency_key_reused', message: expect.stringContaining('key-1') });
    }
    // The same body (its keys in any order) is the same event: the same 202 {seq}.
    const again = await send({ task: 'first', type: 'task.add' });
    expect([again.status, await readJson(again), again.headers.get('idempotent-replayed')]).toEqual([202, { seq: 1 }, 'true']);
    expect((await t.store.eventsAfter('e3', 0)).map((e) => e.event)).toEqual([{ type: 'task.add', task: 'first' }]);
    await waitForView(t.app, 'e3', isIdleWith(1));
  });

  it('answers 422 invalid_event listing the known types for an event the machine does not know', async () => {
    t = await testApp();
    await spawn(t.app, 'e3');
    const res = await postJson(t.app, '/agents/e3/events', { type: 'dance' });
    expect(res.status).toBe(422);
    const { error } = await readJson(res);
    expect(error.code).toBe('invalid_event');
    for (const type of ['finish', 'retry', 'task.add', 'task.skip']) expect(error.message).toContain(type);
    expect(await t.store.eventsAfter('e3', 0)).toEqual([]);
  });

  it.each(['xstate.init', 'xstate.done.actor.llm', 'runtime.committed', 'xstate.stop'])(
    'treats the internal event %s as unknown (422)',
    async (type) => {
      t = await testApp();
      await spawn(t.app, 'e4');
      const res = await postJson(t.app, '/agents/e4/events', { type });
      expect(res.status).toBe(422);
      expect((await readJson(res)).error.code).toBe('invalid_event');
      expect(await t.store.eventsAfter('e4', 0)).toEqual([]);
    },
  );

  it('answers 422 for a known type whose payload the machine refuses', async () => {
    t = await testApp();
    await spawn(t.app, 'e5');
    for (const body of [{ type: 'task.add' }, { type: 'task.add', task: 7 }, { type: 'finish', extra: true }]) {
      const res = await postJson(t.app, '/agents/e5/events', body);
      expect(res.status).toBe(422);
      expect((await readJson(res)).error.code).toBe('invalid_event');
    }
    expect(await t.store.eventsAfter('e5', 0)).toEqual([]);
  });

  it('answers 409 conflict when the agent is no longer active', async () => {
    t = await testApp();
    await spawn(t.app, 'e6');
    await postJson(t.app, '/agents/e6/events', { type: 'finish' });
    await waitForView(t.app, 'e6', (v) => v.status === 'done');
    const res = await postJson(t.app, '/agents/e6/events', { type: 'task.add', task: 'too late' });
    expect(res.status).toBe(409);
    expect((await readJson(res)).error).toMatchObject({ code: 'conflict', message: expect.stringContaining('done') });
  });

  it('answers 404 for an unknown agent', async () => {
    t = await testApp();
    const res = await postJson(t.app, '/agents/nobody/events', { type: 'finish' });
    expect(res.status).toBe(404);
    expect((await readJson(res)).error.code).toBe('not_found');
    expect((await getJson(t.app, '/agents/nobody')).status).toBe(404);
  });
});

/** The HTTP app over a runtime of machines with wildcard descriptors (the harness runs the agent and the toggle). */
async function wildcardApp(): Promise<TestApp> {
  const any = createMachine({ id: 'any', initial: 'idle', states: { idle: { on: { '*': 'caught' } }, caught: { on: { reset: 'idle' } } } });
  const partial = createMachine({ id: 'partial', initial: 'idle', states: { idle: { on: { 'event.*': 'caught' } }, caught: { on: { reset: 'idle' } } } });
  return testApp({
    machines: [
      { name: 'any', machine: any },
      { name: 'partial', machine: partial },
    ],
  });
}

describe('events through wildcard descriptors', () => {
  it("answers 202 for a type a wildcard matches, and 422 for one it does not or a reserved one", async () => {
    t = await wildcardApp();
    await spawn(t.app, 'p1', {}, 'partial');
    const refused = await postJson(t.app, '/agents/p1/events', { type: 'eventx' });
    expect(refused.status).toBe(422);
    expect((await readJson(refused)).error).toMatchObject({ code: 'invalid_event', message: expect.stringContaining('event.*') });
    const res = await postJson(t.app, '/agents/p1/events', { type: 'event.created', id: 7 });
    expect(res.status).toBe(202);
    expect(await readJson(res)).toEqual({ seq: 1 });
    await waitForView(t.app, 'p1', (v) => v.state === 'caught');

    await spawn(t.app, 'w1', {}, 'any');
    for (const type of ['*', 'xstate.init', 'runtime.committed', 'agent.done']) {
      expect((await postJson(t.app, '/agents/w1/events', { type })).status).toBe(422);
    }
    const any = await postJson(t.app, '/agents/w1/events', { type: 'whatever' });
    expect(any.status).toBe(202);
    await waitForView(t.app, 'w1', (v) => v.state === 'caught');
    expect(await t.store.eventsAfter('w1', 0)).toHaveLength(1);
  });

  it("lists '*' and 'event.*' in GET /machines as the machines write them", async () => {
    t = await wildcardApp();
    const { status, body } = await getJson<{ items: { name: string; events: string[] }[] }>(t.app, '/machines');
    expect(status).toBe(200);
    expect(body.items.map(({ name, events }) => ({ name, events }))).toEqual([
      { name: 'any', events: ['*', 'reset'] },
      { name: 'partial', events: ['event.*', 'reset'] },
    ]);
  });
});

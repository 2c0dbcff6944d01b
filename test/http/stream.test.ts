import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AgentView } from '../../src/runtime/views.js';
import { getJson, postJson, readJson, spawn, sseReader, testApp, type TestApp } from './harness.js';

let t: TestApp;
afterEach(async () => {
  vi.restoreAllMocks();
  await t?.close();
});

async function openStream(id: string) {
  const res = await t.app.request(`/agents/${id}/stream`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  return sseReader(res);
}

/** Reads snapshot events until one matches; returns every view read. */
async function readUntil(stream: ReturnType<typeof sseReader>, stop: (v: AgentView) => boolean): Promise<AgentView[]> {
  const views: AgentView[] = [];
  for (;;) {
    const event = await stream.next();
    if (!event) throw new Error(`stream ended after ${JSON.stringify(views.map((v) => v.state))}`);
    if (event.event === 'token') continue; // the text of the LLM call in flight (test/http/stream-tokens.test.ts)
    expect(event.event).toBe('snapshot');
    const view = JSON.parse(event.data) as AgentView;
    views.push(view);
    if (stop(view)) return views;
  }
}

describe('GET /agents/:id/stream', () => {
  it('sends the current view on connect, then one snapshot per committed transition', async () => {
    t = await testApp();
    await spawn(t.app, 's1');
    const stream = await openStream('s1');
    const [first] = await readUntil(stream, () => true);
    expect(first).toMatchObject({ id: 's1', state: 'idle', status: 'active', progress: 0 });

    await postJson(t.app, '/agents/s1/events', { type: 'task.add', task: 'stream me' });
    const views = await readUntil(stream, (v) => v.state === 'idle' && v.progress === 1);
    const states = views.map((v) => (typeof v.state === 'string' ? v.state : Object.keys(v.state as object)[0]));
    expect(states).toEqual(expect.arrayContaining(['callingLLM', 'persisted', 'sideEffect', 'idle']));
    // One event per transition: no view is sent twice in a row.
    for (let i = 1; i < views.length; i++) expect(views[i]).not.toEqual(views[i - 1]);
    const checkpoints = (await getJson(t.app, '/agents/s1/checkpoints')).body.items;
    expect(views.length).toBeLessThanOrEqual(checkpoints.length);

    await postJson(t.app, '/agents/s1/events', { type: 'finish' });
    const [last] = await readUntil(stream, (v) => v.status === 'done');
    expect(last).toMatchObject({ state: 'done', status: 'done', progress: 1 });
    // Nothing will change any more: the stream ends.
    expect(await stream.next()).toBeUndefined();
  });

  it('sends one snapshot and ends for an agent that is no longer active', async () => {
    t = await testApp();
    await spawn(t.app, 's2');
    await t.app.request('/agents/s2', { method: 'DELETE' });
    const stream = await openStream('s2');
    const event = await stream.next();
    expect(JSON.parse(event!.data)).toMatchObject({ id: 's2', status: 'stopped' });
    expect(await stream.next()).toBeUndefined();
  });

  it('stops watching the agent when the client goes away', async () => {
    t = await testApp();
    await spawn(t.app, 's3');
    const unsubscribed = vi.fn();
    const open = t.runtime.openEventFeed.bind(t.runtime);
    vi.spyOn(t.runtime, 'openEventFeed').mockImplementation(async (id, from, emit) => {
      const feed = await open(id, from, emit);
      const close = feed.close.bind(feed);
      feed.close = () => {
        unsubscribed(id);
        close();
      };
      return feed;
    });
    const stream = await openStream('s3');
    await stream.next();
    expect(unsubscribed).not.toHaveBeenCalled();
    await stream.cancel();
    await vi.waitFor(() => expect(unsubscribed).toHaveBeenCalledWith('s3'));
  });

  it('ends open streams when the server shuts down', async () => {
    const shutdown = new AbortController();
    t = await testApp({ shutdown: shutdown.signal });
    await spawn(t.app, 's4');
    const stream = await openStream('s4');
    expect((await stream.next())?.event).toBe('snapshot');
    shutdown.abort();
    expect(await stream.next()).toBeUndefined();
  });

  it('answers a JSON 404 for an unknown agent and 400 for a malformed id', async () => {
    t = await testApp();
    const missing = await t.app.request('/agents/ghost/stream');
    expect(missing.status).toBe(404);
    expect((await readJson(missing)).error.code).toBe('not_found');
    const bad = await t.app.request('/agents/..%2Fx/stream');
    expect(bad.status).toBe(400);
    expect((await readJson(bad)).error.code).toBe('invalid_id');
  });
});

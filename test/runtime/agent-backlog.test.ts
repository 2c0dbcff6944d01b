// The reference agent's backlog: its queued tasks are work it accepted and has not done, so they
// count against the inbox cap (RuntimeOptions.maxInbox) with the events in its inbox. A real
// SQLite file; an LLM that answers only when the test lets it, so the queue stays put meanwhile.
import { afterEach, describe, expect, it } from 'vitest';
import { agentDefinition, queuedTasks } from '../../src/agents/reference/definition.js';
import type { AgentContext } from '../../src/agents/reference/types.js';
import { InboxFullError } from '../../src/core/errors.js';
import { createServer } from '../../src/http/app.js';
import { lastUserText, textAnswer, type LlmClient } from '../../src/llm/client.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { startRuntime, waitForView } from '../helpers/runtime.js';

/** An LLM whose answers wait for `release()`: until then the agent's first task stays in flight. */
function heldLlm() {
  let open!: () => void;
  const released = new Promise<void>((resolve) => (open = resolve));
  const asked: string[] = [];
  const llm: LlmClient = {
    kind: 'openai',
    description: 'held',
    async complete(request, signal) {
      asked.push(lastUserText(request));
      await Promise.race([released, new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }))]);
      return textAnswer(`answer: ${lastUserText(request)}`);
    },
  };
  return { llm, asked, release: () => open() };
}

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
});

const queueOf = (view: { context: unknown }) => (view.context as AgentContext).queue;

describe("the reference agent's backlog", () => {
  it('is its queued tasks, the current one not counted', () => {
    expect(queuedTasks({ queue: ['a', 'b'] })).toBe(2);
    expect(queuedTasks({ queue: [] })).toBe(0);
    expect(queuedTasks(null)).toBe(0);
    expect(queuedTasks({})).toBe(0);
  });

  it('counts queued tasks against maxInbox: a task.add past it is refused and stores nothing; room comes back as tasks are done', async () => {
    const held = heldLlm();
    ({ runtime } = await startRuntime({ llm: held.llm, maxInbox: 3 }));
    await runtime.spawn('agent', { id: 'busy', input: { tasks: ['t1', 't2', 't3', 't4'] } });
    // t1 is being asked; t2..t4 wait in the queue: three, the cap.
    await waitForView(runtime, 'busy', (v) => queueOf(v).length === 3 && held.asked.length === 1);
    const refused = await runtime.send('busy', { type: 'task.add', task: 't5' }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(InboxFullError);
    expect(refused).toMatchObject({ code: 'inbox_full', waiting: 3, maxInbox: 3 });
    expect((await runtime.agentOrThrow('busy')).eventSeq).toBe(0);

    held.release();
    await waitForView(runtime, 'busy', (v) => v.state === 'idle' && v.progress === 4);
    // Done: the queue is empty, so a task is taken again.
    expect(await runtime.send('busy', { type: 'task.add', task: 't5' })).toMatchObject({ seq: 1 });
    await waitForView(runtime, 'busy', (v) => v.state === 'idle' && v.progress === 5);
    expect(held.asked).toEqual(['t1', 't2', 't3', 't4', 't5']);
  });

  it('counts tasks added while it works: once they reach maxInbox, the next task.add is refused', async () => {
    const held = heldLlm();
    ({ runtime } = await startRuntime({ llm: held.llm, maxInbox: 3 }));
    await runtime.spawn('agent', { id: 'light', input: { tasks: ['only'] } });
    await waitForView(runtime, 'light', () => held.asked.length === 1);
    // Three tasks added while the first is asked: each one in the inbox or the queue counts.
    for (const task of ['x', 'y', 'z']) await runtime.send('light', { type: 'task.add', task });
    await waitForView(runtime, 'light', (v) => queueOf(v).length === 3);
    await expect(runtime.send('light', { type: 'task.add', task: 'w' })).rejects.toBeInstanceOf(InboxFullError);
    held.release();
    await waitForView(runtime, 'light', (v) => v.state === 'idle' && v.progress === 4);
    expect(held.asked).toEqual(['only', 'x', 'y', 'z']);
  });

  it('answers 429 inbox_full with Retry-After over HTTP, and the task is not stored', async () => {
    const held = heldLlm();
    ({ runtime } = await startRuntime({ llm: held.llm, maxInbox: 2 }));
    const app = createServer({ runtime });
    const post = (path: string, body: unknown) =>
      app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post('/agents', { machine: 'agent', id: 'h1', input: { tasks: ['a', 'b', 'c'] } })).status).toBe(201);
    await waitForView(runtime, 'h1', (v) => queueOf(v).length === 2 && held.asked.length === 1);
    const full = await post('/agents/h1/events', { type: 'task.add', task: 'd' });
    expect(full.status).toBe(429);
    expect(full.headers.get('retry-after')).toBe('1');
    expect(await full.json()).toMatchObject({ error: { code: 'inbox_full' } });
    expect((await runtime.agentOrThrow('h1')).eventSeq).toBe(0);
    held.release();
    await waitForView(runtime, 'h1', (v) => v.state === 'idle' && v.progress === 3);
    expect((await post('/agents/h1/events', { type: 'task.add', task: 'd' })).status).toBe(202);
  });
});

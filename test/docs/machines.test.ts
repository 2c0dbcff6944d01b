// The user machine of docs/machines.md (test/docs/examples/digest-machine.ts) on the real runtime and
// a real SQLite file: what the page says of it holds.
import { describe, expect, it, vi } from 'vitest';
import { createRuntime, createSimulatedLlm, type AgentView, type LlmClient, type LlmRequest, type Runtime } from '../../src/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { tempDbFile } from '../helpers/temp.js';
import { digestDefinition, type DigestDependencies } from './examples/digest-machine.js';

/** The simulated LLM, counting its calls; deliveries recorded with the time they were made. */
function recordingDeps() {
  const llmCalls: LlmRequest[] = [];
  const deliveries: { idempotencyKey: string; topic: string; text: string; at: number }[] = [];
  const simulated = createSimulatedLlm();
  const llm: LlmClient = {
    kind: simulated.kind,
    description: simulated.description,
    complete: (request, signal) => {
      llmCalls.push(request);
      return simulated.complete(request, signal);
    },
  };
  const deliver: DigestDependencies['deliver'] = (delivery) => {
    deliveries.push({ ...delivery, at: Date.now() });
    return Promise.resolve({ messageId: `m-${deliveries.length}` });
  };
  return { deps: { llm, deliver }, llmCalls, deliveries };
}

async function start(file: string, deps: DigestDependencies, change: (d: ReturnType<typeof digestDefinition>) => void = () => {}): Promise<Runtime> {
  const definition = digestDefinition(deps);
  change(definition);
  return createRuntime({ store: await openSqliteStore(file), machines: [definition] });
}

function waitFor(runtime: Runtime, id: string, predicate: (view: AgentView) => boolean, timeout = 5_000): Promise<AgentView> {
  return vi.waitFor(
    async () => {
      const view = await runtime.view(id);
      if (!predicate(view)) throw new Error(`${id} is ${JSON.stringify(view.state)} (${view.status})`);
      return view;
    },
    { timeout, interval: 10 },
  );
}

const contextOf = (view: AgentView) => view.context as Record<string, unknown>;

describe('the digest machine of docs/machines.md', () => {
  it('drafts once, commits the draft, waits until sendAt, then delivers once under its key; the timer is not in the action log', async () => {
    const { deps, llmCalls, deliveries } = recordingDeps();
    const runtime = await start(tempDbFile(), deps);
    try {
      await runtime.spawn('digest', { id: 'd1' });
      const sendAt = Date.now() + 300;
      await runtime.send('d1', { type: 'schedule', topic: 'This week in durable agents', sendAt });
      const view = await waitFor(runtime, 'd1', (v) => v.status === 'done');

      expect(view.state).toBe('delivered');
      expect(contextOf(view)).toMatchObject({ messageId: 'm-1', error: null });
      expect(llmCalls).toEqual([
        expect.objectContaining({
          messages: [
            { role: 'system', content: 'Write a five-line digest.' },
            { role: 'user', content: 'This week in durable agents' },
          ],
        }),
      ]);
      expect(deliveries).toEqual([
        { idempotencyKey: 'd1:digest', topic: 'This week in durable agents', text: 'Simulated answer (gpt-4o-mini) to: This week in durable agents', at: expect.any(Number) },
      ]);
      expect(deliveries[0]!.at).toBeGreaterThanOrEqual(sendAt);
      expect((await runtime.checkpoints('d1')).map((c) => c.state)).toEqual(['idle', 'drafting', 'drafted', 'waiting', 'delivering', 'delivered']);
      expect((await runtime.actions('d1')).map((a) => a.action)).toEqual(['writeDraft', 'deliver']);
    } finally {
      await runtime.close();
    }
  });

  it('restarted during the wait, resumes it from the checkpoint and never asks the LLM again', async () => {
    const file = tempDbFile();
    const { deps, llmCalls, deliveries } = recordingDeps();
    const first = await start(file, deps);
    const sendAt = Date.now() + 1_500;
    await first.spawn('digest', { id: 'd1' });
    await first.send('d1', { type: 'schedule', topic: 'Release notes', sendAt });
    await waitFor(first, 'd1', (v) => v.state === 'waiting');
    await first.close();
    expect(deliveries).toEqual([]);

    const second = await start(file, deps);
    try {
      const view = await waitFor(second, 'd1', (v) => v.status === 'done', 10_000);
      expect(view.state).toBe('delivered');
      expect(llmCalls).toHaveLength(1);
      expect(deliveries.map((d) => d.idempotencyKey)).toEqual(['d1:digest']);
      expect(deliveries[0]!.at).toBeGreaterThanOrEqual(sendAt);
    } finally {
      await second.close();
    }
  });

  it('refuses a schedule event the schemas reject, naming the field', async () => {
    const { deps } = recordingDeps();
    const runtime = await start(tempDbFile(), deps);
    try {
      await runtime.spawn('digest', { id: 'd1' });
      await expect(runtime.send('d1', { type: 'schedule', topic: '', sendAt: 0 })).rejects.toThrow(/topic/);
      await expect(runtime.send('d1', { type: 'publish' })).rejects.toMatchObject({ code: 'invalid_event' });
    } finally {
      await runtime.close();
    }
  });
});

describe('the digest upgrade of docs/machines.md', () => {
  /** A checkpoint as version 1 wrote it (the deadline under `at`), waiting an hour, beside nothing else. */
  async function fileWithVersion1Agent(): Promise<{ file: string; sendAt: number }> {
    const file = tempDbFile();
    const { deps } = recordingDeps();
    const runtime = await start(file, deps);
    const sendAt = Date.now() + 3_600_000;
    await runtime.spawn('digest', { id: 'model' });
    await runtime.send('model', { type: 'schedule', topic: 'Release notes', sendAt });
    await waitFor(runtime, 'model', (v) => v.state === 'waiting');
    const { seq } = (await runtime.checkpoints('model')).at(-1)!;
    const checkpoint = await runtime.checkpoint('model', seq);
    await runtime.stop('model');
    await runtime.close();

    const { sendAt: _sendAt, ...context } = checkpoint.snapshot.context as Record<string, unknown>;
    const version1 = { ...checkpoint.snapshot, context: { ...context, at: sendAt } };
    const store = await openSqliteStore(file);
    await store.createAgent({
      id: 'old',
      machine: 'digest',
      machineVersion: '1',
      input: {},
      createdAt: new Date().toISOString(),
      snapshot: { machineVersion: '1', eventType: checkpoint.eventType, state: checkpoint.state, status: 'active', progress: 0, snapshot: JSON.stringify(version1) },
    });
    await store.close();
    return { file, sendAt };
  }

  it('restores a version 1 checkpoint as version 2, its deadline under the new name', async () => {
    const { file, sendAt } = await fileWithVersion1Agent();
    const runtime = await start(file, recordingDeps().deps);
    try {
      const view = await waitFor(runtime, 'old', (v) => v.context !== null);
      expect(view).toMatchObject({ status: 'active', state: 'waiting' });
      expect(contextOf(view).sendAt).toBe(sendAt);
      expect(contextOf(view)).not.toHaveProperty('at');
    } finally {
      await runtime.close();
    }
  });

  it('without the upgrade, quarantines the agent: status error, naming the version', async () => {
    const { file } = await fileWithVersion1Agent();
    const runtime = await start(file, recordingDeps().deps, (definition) => {
      delete definition.upgrades;
    });
    try {
      expect((await runtime.view('old')).status).toBe('error');
    } finally {
      await runtime.close();
    }
    const store = await openSqliteStore(file);
    try {
      expect((await store.getAgent('old'))?.error?.message).toMatch(/version 1\b/);
    } finally {
      await store.close();
    }
  });
});

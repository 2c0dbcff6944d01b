// A read-only runtime (RuntimeOptions.readOnly, or a store opened read-only) restores and runs
// nothing and takes no command; it serves what is stored.
import { describe, expect, it } from 'vitest';
import { InvalidInputError, ReadOnlyStoreError } from '../../src/core/errors.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { hangUntilAborted, recordingLlm, runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';

describe('a read-only runtime', () => {
  const start = runtimesClosedAfterEach();

  /** A file whose agent `a1` was left in the middle of an LLM call (a restore would call again). */
  async function fileWithAnAgentMidCall(): Promise<string> {
    const hanging = recordingLlm((_, signal) => hangUntilAborted(signal));
    const writer = await start({ llm: hanging.llm, passivateAfterMs: 60_000, retention: { keepCheckpoints: 1 } });
    await writer.runtime.spawn('agent', { id: 'a1', input: { tasks: ['t1'] } });
    await waitForView(writer.runtime, 'a1', () => hanging.calls.length === 1);
    await writer.runtime.close();
    return writer.file;
  }

  it('on a store opened read-only, restores nothing, serves views, lists and history, and refuses every command', async () => {
    const file = await fileWithAnAgentMidCall();
    const llm = recordingLlm();
    const store = await openSqliteStore(file, { readOnly: true });
    const runtime = await createRuntime({ store, machines: [agentDefinition({ llm: llm.llm })], passivateAfterMs: 10, retention: { keepCheckpoints: 1 } });
    try {
      expect(runtime.readOnly).toBe(true);
      expect(runtime.liveAgents).toBe(0);
      const view = await runtime.view('a1');
      expect(view).toMatchObject({ id: 'a1', status: 'active', state: { callingLLM: expect.anything() } });
      expect((await runtime.list({ limit: 10 })).items.map((v) => v.id)).toEqual(['a1']);
      const checkpoints = await runtime.checkpoints('a1');
      expect(await runtime.checkpoint('a1', checkpoints.at(-1)!.seq)).toMatchObject({ agentId: 'a1' });
      await runtime.actions('a1');

      const commands: [string, () => Promise<unknown>][] = [
        ['spawn an agent', () => runtime.spawn('agent', { id: 'a2' })],
        ['send to an agent', () => runtime.send('a1', { type: 'task.add', task: 't2' })],
        ['stop an agent', () => runtime.stop('a1')],
        ['fork an agent', () => runtime.fork('a1', 1, 'a1-fork')],
        ['prune', () => runtime.prune()],
        ['recover agents', () => runtime.recover()],
      ];
      for (const [operation, command] of commands) {
        await expect(command(), operation).rejects.toThrow(new ReadOnlyStoreError(operation).message);
      }
      // Nothing ran meanwhile: no LLM call (a restore would have made one), nothing written.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(llm.calls).toHaveLength(0);
      expect(runtime.liveAgents).toBe(0);
      expect(await runtime.checkpoints('a1')).toEqual(checkpoints);
      expect(await store.getAgent('a2')).toBeUndefined();
    } finally {
      await runtime.close();
    }
  });

  it('on a writable store when asked (readOnly: true): still runs nothing; a read-only store cannot be run', async () => {
    const file = await fileWithAnAgentMidCall();
    const llm = recordingLlm();
    const store = await openSqliteStore(file);
    const runtime = await createRuntime({ store, machines: [agentDefinition({ llm: llm.llm })], readOnly: true });
    try {
      await expect(runtime.send('a1', { type: 'task.add', task: 't2' })).rejects.toBeInstanceOf(ReadOnlyStoreError);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(llm.calls).toHaveLength(0);
      expect((await runtime.view('a1')).status).toBe('active');
    } finally {
      await runtime.close();
    }

    const readOnlyStore = await openSqliteStore(file, { readOnly: true });
    await expect(createRuntime({ store: readOnlyStore, machines: [agentDefinition({ llm: llm.llm })], readOnly: false })).rejects.toBeInstanceOf(
      InvalidInputError,
    );
    await readOnlyStore.close();
  });
});

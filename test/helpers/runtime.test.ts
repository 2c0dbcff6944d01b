// The runtime fixture itself: what a test gets back, and the mistakes it refuses instead of ignoring.
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { crashableStore } from '../../src/testing/index.js';
import { isIdleWithProgress, recordingLlm, runtimesClosedAfterEach, waitForView } from './runtime.js';
import { tempDbFile } from './temp.js';

describe('runtime fixture', () => {
  const start = runtimesClosedAfterEach();

  it('runs the reference agent on a temp SQLite file, and a second runtime on that file finds its agents', async () => {
    const llm = recordingLlm();
    const first = await start({ llm: llm.llm });
    expect(first.file).toMatch(/agents\.db$/);
    await first.runtime.spawn('agent', { id: 'a1', input: { tasks: ['t1'] } });
    await waitForView(first.runtime, 'a1', isIdleWithProgress(1));
    expect(llm.callsFor('t1')).toBe(1);
    await first.runtime.close();

    const second = await start({ file: first.file });
    expect(second.file).toBe(first.file);
    expect((await second.runtime.view('a1')).progress).toBe(1);
  });

  it('captures the log lines when asked, and refuses to read logs it did not capture', async () => {
    const captured = await start({ logs: 'captured' });
    await captured.runtime.spawn('agent', { id: 'a1' });
    await captured.runtime.send('a1', { type: 'retry' }); // ignored by an idle agent, which the runtime logs at debug
    await waitForView(captured.runtime, 'a1', () => captured.logs.length > 0);
    expect(captured.logs).toContainEqual(expect.objectContaining({ msg: 'event ignored in the current state', agentId: 'a1', event: 'retry' }));

    const silent = await start();
    await silent.runtime.spawn('agent', { id: 'a1' });
    expect(() => silent.logs).toThrow(/not captured/);
  });

  it('runs on a store it is given, and names its file when that store is (or wraps) a SQLite one', async () => {
    const file = tempDbFile();
    const wrapped = crashableStore(await openSqliteStore(file)).store;
    const onWrapped = await start({ store: wrapped });
    expect(onWrapped.store).toBe(wrapped);
    expect(onWrapped.file).toBe(file);
    await onWrapped.runtime.spawn('agent', { id: 'a1' });
    await onWrapped.runtime.close();
    const reopened = await openSqliteStore(file);
    expect(await reopened.getAgent('a1')).toMatchObject({ id: 'a1' });
    await reopened.close();

    const memory = new MemoryStore();
    const inMemory = await start({ store: memory });
    expect(inMemory.store).toBe(memory);
    expect(inMemory.file).toBeUndefined();
  });

  it('refuses options that would be ignored', async () => {
    const store = await openSqliteStore(tempDbFile());
    await expect(start({ store, file: tempDbFile() })).rejects.toThrow(/not both/);
    await store.close();
    await expect(start({ machines: [], llm: recordingLlm().llm })).rejects.toThrow(/would be ignored/);
  });
});

// runtime.waitFor: the agent's view as soon as a predicate holds, looking at the current view first
// (as XState's waitFor does: an agent that got there before the call, even in an earlier process,
// resolves at once), then at the view after each committed transition; a timeout, the agent ending
// without the predicate, an abort or the runtime closing reject it. And after a kill -9 (a real
// child process), on the agent the next runtime restores.
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { describe, expect, it, vi } from 'vitest';
import { createMachine } from 'xstate';
import { NotFoundError } from '../../src/core/errors.js';
import { WaitForError, type Runtime } from '../../src/runtime/runtime.js';
import type { AgentView } from '../../src/runtime/views.js';
import { isIdleWithProgress, recordingLlm, runtimesClosedAfterEach, startRuntime } from '../helpers/runtime.js';
import { tempDbFile } from '../helpers/temp.js';

/** A machine that waits for its events: flip turns it on and off, break ends it (done). */
const lamp = {
  name: 'lamp',
  machine: createMachine({
    id: 'lamp',
    initial: 'off',
    states: {
      off: { on: { flip: 'on', break: 'broken' } },
      on: { on: { flip: 'off', break: 'broken' } },
      broken: { type: 'final' },
    },
  }),
};

const isOn = (view: AgentView) => view.state === 'on';

describe('runtime.waitFor', () => {
  const start = runtimesClosedAfterEach();

  it('resolves at once when the current view matches: the same program run twice on one file', async () => {
    const file = tempDbFile();
    const seen: AgentView[][] = [];
    // What a user's program does: open the file, spawn (idempotent), wait until the agent rests with its task done.
    const program = async () => {
      const { runtime } = await startRuntime({ file, llm: recordingLlm().llm });
      try {
        await runtime.spawn('agent', { id: 'a1', input: { tasks: ['t1'] } });
        const looked: AgentView[] = [];
        seen.push(looked);
        return await runtime.waitFor('a1', (view) => (looked.push(view), isIdleWithProgress(1)(view)), { timeoutMs: 5000 });
      } finally {
        await runtime.close();
      }
    };

    expect(await program()).toMatchObject({ id: 'a1', status: 'active', state: 'idle', progress: 1 });
    // The second run commits nothing (the agent rests): only its current view can resolve the wait.
    expect(await program()).toMatchObject({ id: 'a1', status: 'active', state: 'idle', progress: 1 });
    expect(seen[0]!.length).toBeGreaterThan(1);
    expect(seen[1]).toHaveLength(1);
  });

  it('resolves at once on an agent that ended before the call and is not in memory', async () => {
    const first = await start({ machines: [lamp] });
    await first.runtime.spawn('lamp', { id: 'l1' });
    await first.runtime.send('l1', { type: 'break' });
    await first.runtime.waitFor('l1', (view) => view.status === 'done', { timeoutMs: 5000 });
    await first.runtime.close();

    const second = await start({ file: first.file, machines: [lamp] });
    expect(second.runtime.liveAgents).toBe(0);
    expect(await second.runtime.waitFor('l1', (view) => view.status === 'done', { timeoutMs: 5000 })).toMatchObject({ state: 'broken', status: 'done' });
  });

  it('resolves with the view after the commit that makes the predicate hold, not before', async () => {
    const { runtime } = await start({ machines: [lamp] });
    await runtime.spawn('lamp', { id: 'l1' });
    const looked: unknown[] = [];
    const waiting = runtime.waitFor('l1', (view) => (looked.push(view.state), view.state === 'on' && looked.length >= 4));
    await runtime.send('l1', { type: 'flip' }); // on, but the predicate wants a fourth view
    await runtime.send('l1', { type: 'flip' }); // off
    await runtime.send('l1', { type: 'flip' }); // on again
    const view = await waiting;
    expect(view).toMatchObject({ id: 'l1', state: 'on', status: 'active' });
    expect(looked).toEqual(['off', 'on', 'off', 'on']);
  });

  it('misses no commit between its subscription and its read of the current view', async () => {
    const { runtime } = await start({ machines: [lamp] });
    await runtime.spawn('lamp', { id: 'l1' });
    // The read of the current view returns 'off', but only after a flip to 'on' has committed: the
    // wait must have been watching already, or it would wait for a commit that already happened.
    const live = (runtime as unknown as { live: { currentView(id: string): Promise<{ view: AgentView; seq: number }> } }).live;
    const read = live.currentView.bind(live);
    const spy = vi.spyOn(live, 'currentView').mockImplementationOnce(async (id) => {
      const stale = await read(id);
      const flipped = new Promise<void>((resolve) => {
        const unwatch = runtime.watch('l1', (view) => isOn(view) && (unwatch(), resolve()));
      });
      await runtime.send('l1', { type: 'flip' });
      await flipped;
      return stale;
    });
    const view = await runtime.waitFor('l1', isOn, { timeoutMs: 5000 });
    expect(spy).toHaveBeenCalledTimes(1);
    expect(view.state).toBe('on');
  });

  it('rejects with a WaitForError once the timeout passes', async () => {
    const { runtime } = await start({ machines: [lamp] });
    await runtime.spawn('lamp', { id: 'l1' });
    const began = Date.now();
    const failure = await runtime.waitFor('l1', isOn, { timeoutMs: 100 }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(WaitForError);
    expect((failure as WaitForError).message).toBe('Waiting for agent "l1": the condition did not hold within 100 ms.');
    expect(Date.now() - began).toBeGreaterThanOrEqual(90);
    // It let go of the agent: a later flip is not looked at by the failed wait.
    await runtime.send('l1', { type: 'flip' });
    expect(await runtime.waitFor('l1', isOn, { timeoutMs: 5000 })).toMatchObject({ state: 'on' });
  });

  it('rejects, naming the status, when the agent ends without the predicate holding (done, stopped, or already ended)', async () => {
    const { runtime } = await start({ machines: [lamp] });
    await runtime.spawn('lamp', { id: 'done' });
    const broken = runtime.waitFor('done', isOn).catch((err: unknown) => err);
    await runtime.send('done', { type: 'break' });
    const failure = (await broken) as WaitForError;
    expect(failure).toBeInstanceOf(WaitForError);
    expect(failure.message).toBe('Waiting for agent "done": the agent ended (status "done") without the condition holding.');
    expect(failure.view).toMatchObject({ state: 'broken', status: 'done' });

    await runtime.spawn('lamp', { id: 'stopped' });
    const stopped = runtime.waitFor('stopped', isOn).catch((err: unknown) => err);
    await runtime.stop('stopped');
    expect(((await stopped) as Error).message).toMatch(/the agent ended \(status "stopped"\)/);

    // An agent that ended before the call: at once.
    await expect(runtime.waitFor('done', isOn)).rejects.toThrow(/the agent ended \(status "done"\)/);
    // A predicate that holds for the ended view resolves, though.
    expect(await runtime.waitFor('stopped', (view) => view.status === 'stopped')).toMatchObject({ status: 'stopped' });
  });

  it('rejects for an unknown agent, on abort, when the predicate throws, and when the runtime closes', async () => {
    const { runtime } = await start({ machines: [lamp] });
    await expect(runtime.waitFor('nobody', isOn)).rejects.toBeInstanceOf(NotFoundError);

    await runtime.spawn('lamp', { id: 'l1' });
    const controller = new AbortController();
    const aborted = runtime.waitFor('l1', isOn, { signal: controller.signal }).catch((err: unknown) => err);
    controller.abort();
    expect(((await aborted) as Error).message).toBe('Waiting for agent "l1": the wait was aborted.');

    await expect(
      runtime.waitFor('l1', () => {
        throw new Error('bad predicate');
      }),
    ).rejects.toThrow('bad predicate');

    const pending = runtime.waitFor('l1', isOn).catch((err: unknown) => err);
    await runtime.close();
    expect(((await pending) as Error).message).toBe('Waiting for agent "l1": the runtime closed.');
    await expect(runtime.waitFor('l1', isOn)).rejects.toThrow('the runtime is closed');
  });

  it('after a kill -9 mid-task, resolves on the agent the next runtime restores', async () => {
    const file = tempDbFile();
    await killedMidCall(file);

    const working = recordingLlm();
    const { runtime } = await start({ file, llm: working.llm });
    const view = await waitForDone(runtime);
    expect(view).toMatchObject({ id: 'a1', status: 'active', state: 'idle', progress: 1 });
    expect(working.callsFor('t1')).toBe(1);
  });
});

function waitForDone(runtime: Runtime): Promise<AgentView> {
  return runtime.waitFor('a1', isIdleWithProgress(1), { timeoutMs: 10_000 });
}

const SRC = path.join(import.meta.dirname, '../../src');

/** A child process spawns agent a1 on `file`, its LLM call hangs; SIGKILLed once that call is in flight. */
async function killedMidCall(file: string): Promise<void> {
  const script = `
    const { agentDefinition, createRuntime } = await import(${JSON.stringify(path.join(SRC, 'index.js'))});
    const { openSqliteStore } = await import(${JSON.stringify(path.join(SRC, 'store/sqlite/index.js'))});
    const llm = { kind: 'simulated', description: 'hangs', complete: () => (console.log('calling'), new Promise(() => {})) };
    const runtime = await createRuntime({ store: await openSqliteStore(${JSON.stringify(file)}), machines: [agentDefinition({ llm })] });
    await runtime.spawn('agent', { id: 'a1', input: { tasks: ['t1'] } });
  `;
  const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const calling = new Promise<boolean>((resolve) => {
    readline.createInterface({ input: child.stdout! }).on('line', (line) => line === 'calling' && resolve(true));
    void exited.then(() => resolve(false));
  });
  try {
    if (!(await calling)) throw new Error(`the child exited before its LLM call: ${stderr}`);
  } finally {
    child.kill('SIGKILL');
  }
  expect(await exited).toBe('SIGKILL');
}

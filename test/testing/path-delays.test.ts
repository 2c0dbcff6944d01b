// `after` in path tests: the traversal takes a delayed transition as a "time passes" step, and the
// run makes the runtime's own durable delay due (it never comes due on its own in a path run).
import { describe, expect, it } from 'vitest';
import { assign, fromPromise, setup } from 'xstate';
import { createRuntime } from '../../src/runtime/runtime.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { AgentProbe } from '../../src/testing/agent-probe.js';
import { pathTests } from '../../src/testing/index.js';
import { failureOf } from '../helpers/path-failure.js';
import { tempDbFile } from '../helpers/temp.js';

const never = fromPromise<unknown, unknown>(() => new Promise(() => {}));

/** idle --start--> waiting: after 60 s → late; a `job` invoked there: done → finished. */
const timerMachine = setup({ actors: { work: never } }).createMachine({
  id: 'timer',
  initial: 'idle',
  states: {
    idle: { on: { start: 'waiting' } },
    waiting: {
      invoke: { id: 'job', src: 'work', onDone: 'finished', onError: 'idle' },
      after: { 60_000: 'late' },
    },
    late: { type: 'final' },
    finished: { type: 'final' },
  },
});

const AFTER = 'xstate.after.60000.timer.waiting';


describe('pathTests: after', () => {
  const suite = pathTests({ machine: timerMachine, events: [{ type: 'start' }] });
  const late = suite.paths.find((p) => p.steps.at(-1)!.state === 'late')!;

  it('derives one event per delayed transition, explored only while its state is active, with a readable label', () => {
    expect(suite.events.map((e) => e.type)).toEqual(['start', 'xstate.done.actor.job', 'xstate.error.actor.job', AFTER]);
    expect(suite.paths.map((p) => p.name)).toEqual(['#1 start → job.done ⇒ finished (done)', '#2 start → after 60000 ms ⇒ late (done)', '#3 start → job.error ⇒ idle']);
    expect(suite.coverage.transitions.covered).toContain('timer.waiting: after 60000 ms → timer.late');
    expect(suite.coverage.transitions.missing).toEqual([]);
  });

  it('fires the delay the runtime armed, at once: the run takes the delayed transition, a minute early', async () => {
    const started = Date.now();
    const result = await late.run();
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result).toMatchObject({ state: 'late', status: 'done', checkpoints: 3 });
    // Armed by the transition into `waiting` (step 1), for its deadline by the wall clock.
    expect(result.delays).toEqual([{ incarnation: 1, step: 1, id: AFTER, event: AFTER, at: expect.any(Number) }]);
    expect(result.delays[0]!.at - started).toBeGreaterThanOrEqual(60_000);
    // The job was started (the state's invoke) and stopped by the transition: never settled.
    expect(result.starts.map((s) => s.id)).toEqual(['job']);
  });

  it('crashes with the delay pending: the restored agent arms it again from its checkpoint, and it fires there', async () => {
    const crash = suite.crashCases.find((c) => c.path === late && c.crashAfter === 1)!;
    expect(crash.name).toBe('#2 start → after 60000 ms ⇒ late (done) | crash after 1/2 in waiting');
    const { reference, crashed } = await crash.run();
    // The checkpoint restored from held the delay, and the restored process armed it again.
    expect(crashed.rearmed).toEqual([{ id: AFTER, at: expect.any(Number) }]);
    const [first, again] = crashed.delays;
    expect([first, again].map((d) => d && [d.incarnation, d.step])).toEqual([
      [1, 1],
      [2, 1],
    ]);
    // For the deadline stored when it was first armed (each is read beside the runtime's, microseconds apart).
    expect(Math.abs(crashed.rearmed[0]!.at - first!.at)).toBeLessThan(50);
    expect(Math.abs(again!.at - crashed.rearmed[0]!.at)).toBeLessThan(50);
    expect(reference.delays).toHaveLength(1);
    expect(crashed).toMatchObject({ state: 'late', status: 'done', checkpoints: 3 });
    for (const c of suite.crashCases) await c.run();
  });

  it('fails a step that fires a delay no state armed, naming what is pending', async () => {
    const wrong = pathTests({ machine: timerMachine, events: [{ type: 'start' }] }).paths[0]!;
    wrong.steps[1] = { ...wrong.steps[1]!, event: { type: AFTER } }; // in idle: nothing is armed yet
    expect((await failureOf(wrong.run())).message).toMatch(/^step 1\/2 \(after 60000 ms in timer\.waiting\): no pending delay "after 60000 ms" to fire \(pending: none\)/);
  });

  it('names a delay from setup({ delays }) by its name', () => {
    const named = setup({ delays: { patience: 30_000 } }).createMachine({
      id: 'named',
      initial: 'a',
      states: { a: { after: { patience: 'b' } }, b: { type: 'final' } },
    });
    expect(pathTests({ machine: named, events: [] }).paths.map((p) => p.name)).toEqual(['#1 after patience ⇒ b (done)']);
  });

  it('reports a delayed transition that stays in its state as missing: it fires once while the state is the same', () => {
    const counter = setup({ types: { context: {} as { n: number } } }).createMachine({
      id: 'ticks',
      context: { n: 0 },
      initial: 'counting',
      states: {
        counting: {
          after: { 1000: { actions: assign({ n: ({ context }) => context.n + 1 }) } },
          on: { stop: 'stopped' },
        },
        stopped: { type: 'final' },
      },
    });
    const suite = pathTests({ machine: counter, events: [{ type: 'stop' }] });
    expect(suite.events.map((e) => e.type)).toEqual(['stop']);
    expect(suite.coverage.transitions.missing).toEqual(['ticks.counting: after 1000 ms → (no target)']);
  });
});

describe('the delays of a path run', () => {
  it('are the runtime’s (stored with the checkpoint) but never come due on their own; fire() makes one due', async () => {
    const quick = setup({}).createMachine({ id: 'quick', initial: 'waiting', states: { waiting: { after: { 5: 'late' } }, late: {} } });
    const store = await openSqliteStore(tempDbFile());
    const probe = new AgentProbe('q1', 1, 0);
    const runtime = await createRuntime({ store, machines: [{ name: 'quick', machine: quick }], inspect: probe.inspect });
    try {
      await runtime.spawn('quick', { id: 'q1' });
      await new Promise((resolve) => setTimeout(resolve, 100)); // twenty times the delay
      expect((await runtime.view('q1')).state).toBe('waiting');
      const type = 'xstate.after.5.quick.waiting';
      expect((await store.loadRestorable('q1'))?.checkpoint?.timers).toEqual([{ id: type, at: expect.any(Number), event: { type } }]);
      expect(probe.delays.pending()).toEqual([type]);
      probe.delays.fire(type);
      await expect.poll(async () => (await store.getAgent('q1'))?.lastSeq).toBe(2);
      expect((await runtime.view('q1')).state).toBe('late');
      // Its checkpoint no longer holds the delay: a restore would not fire it again.
      expect((await store.loadRestorable('q1'))?.checkpoint?.timers).toBeUndefined();
      expect(probe.delays.pending()).toEqual([]);
    } finally {
      await runtime.close();
    }
  });
});

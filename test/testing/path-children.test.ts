// Child agents in path tests: each step's spawns are recorded and checked (against the replay of
// the chart, and between the uninterrupted and the crashed run), no child is created or runs, and
// what children report comes from `children`, with their agent ids, through the inbox.
import { describe, expect, it } from 'vitest';
import { assign, setup } from 'xstate';
import { spawnAgent, type ChildEvent } from '../../src/index.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { AgentProbe } from '../../src/testing/agent-probe.js';
import { checkCrashRun } from '../../src/testing/crash-check.js';
import { pathTests, type PathRunResult } from '../../src/testing/index.js';
import { failureOf } from '../helpers/path-failure.js';
import { tempDbFile } from '../helpers/temp.js';

/** idle --start--> working (spawns two `worker`s, named after the agent) --agent.done from each--> finished. */
const bossMachine = setup({
  types: { context: {} as { done: string[] }, events: {} as { type: 'start' } | ChildEvent },
  guards: { lastOne: ({ context, event }) => 'agentId' in event && !context.done.includes(event.agentId) && context.done.length === 1 },
}).createMachine({
  id: 'boss',
  context: { done: [] },
  initial: 'idle',
  states: {
    idle: { on: { start: 'working' } },
    working: {
      entry: ['a', 'b'].map((name) => spawnAgent('worker', { id: ({ self }) => `${self.id}:${name}`, input: { part: name } })),
      on: {
        'agent.done': [
          { guard: 'lastOne', target: 'finished' },
          { guard: ({ context, event }) => !context.done.includes(event.agentId), actions: assign({ done: ({ context, event }) => [...context.done, event.agentId] }) },
        ],
      },
    },
    finished: { type: 'final' },
  },
});

const options = { machine: bossMachine, events: [{ type: 'start' }], children: { worker: { done: [{ ok: true }] } } };


describe('pathTests: children', () => {
  const suite = pathTests(options);
  const finished = suite.paths.find((p) => p.steps.at(-1)!.state === 'finished')!;

  it('derives each child’s reports from the spawns the chart makes, with its agent id', () => {
    expect(suite.spawned).toEqual([
      { machine: 'worker', id: 'path-agent:a', input: { part: 'a' } },
      { machine: 'worker', id: 'path-agent:b', input: { part: 'b' } },
    ]);
    expect(suite.events).toEqual([
      { type: 'start' },
      { type: 'agent.done', agentId: 'path-agent:a', output: { ok: true } },
      { type: 'agent.done', agentId: 'path-agent:b', output: { ok: true } },
    ]);
    expect(suite.paths.map((p) => p.name)).toEqual([
      '#1 start → agent.done(path-agent:a) → agent.done(path-agent:b) ⇒ finished (done)',
      '#2 start → agent.done(path-agent:b) ⇒ working', // like a's first (the default projection counts the list)
    ]);
    expect(suite.coverage.transitions.missing).toEqual([]);
  });

  it('records the spawns of each step, and runs the path with no child created: the reports stand for them', async () => {
    expect(finished.steps.map((s) => s.spawns.map((c) => c.id))).toEqual([[], ['path-agent:a', 'path-agent:b'], [], []]);
    const result = await finished.run();
    expect(result.spawns).toEqual([
      { incarnation: 1, step: 1, machine: 'worker', id: 'path-agent:a', input: { part: 'a' } },
      { incarnation: 1, step: 1, machine: 'worker', id: 'path-agent:b', input: { part: 'b' } },
    ]);
    expect(result).toMatchObject({ state: 'finished', status: 'done', checkpoints: 4 });
  });

  it('keeps the spawns the same across a crash: the restore spawns nothing again, and the reports still come', async () => {
    for (const c of suite.crashCases.filter((x) => x.path === finished)) {
      const { reference, crashed } = await c.run();
      expect(crashed.spawns.map((s) => [s.incarnation, s.step, s.id])).toEqual(
        reference.spawns.map((s) => [c.crashAfter >= 1 ? 1 : 2, 1, s.id]),
      );
    }
  });

  it('fails a step that spawns other children than the chart says', async () => {
    const wrong = pathTests(options).paths[0]!;
    wrong.steps[1] = { ...wrong.steps[1]!, spawns: [{ machine: 'worker', id: 'path-agent:a', input: { part: 'a' } }] };
    expect((await failureOf(wrong.run())).message).toMatch(
      /^step 1\/3 \(start\): expected this step to spawn path-agent:a \(worker\) with input \{"part":"a"\}, but it spawned path-agent:a \(worker\) with input \{"part":"a"\}; path-agent:b \(worker\)/,
    );
  });

  it('fails a crash comparison whose spawns differ, by step', () => {
    const run = (spawns: PathRunResult['spawns']): PathRunResult => ({
      state: 'idle', status: 'active', context: {}, checkpoints: 2, actions: [], effects: [], starts: [], restarted: [], spawns, delays: [], rearmed: [],
    });
    const same = { context: (c: unknown) => c, input: (_: string, i: unknown) => i, spawnInput: (_: string, i: unknown) => i };
    const a = { machine: 'worker', id: 'p:a', input: {} };
    expect(() => checkCrashRun(run([{ incarnation: 1, step: 1, ...a }]), run([{ incarnation: 1, step: 1, ...a }]), 0, same)).not.toThrow();
    expect(() => checkCrashRun(run([{ incarnation: 1, step: 1, ...a }]), run([{ incarnation: 1, step: 1, ...a }, { incarnation: 2, step: 1, ...a }]), 1, same)).toThrow(
      /after a crash at step 1 the child agents spawned differ[\s\S]*expected step 1: p:a \(worker\) with input \{\}\n\s+actual {3}step 1: p:a \(worker\) with input \{\}; step 1: p:a/,
    );
    expect(() => checkCrashRun(run([{ incarnation: 1, step: 1, ...a }]), run([]), 1, same)).toThrow(/expected step 1: p:a \(worker\) with input \{\}\n\s+actual {3}none/);
  });

  it('cuts a path at a second report under one key: a child ends once, and the inbox drops a repeat', () => {
    // Counts every `agent.done`: the traversal would take the same child's twice.
    const counter = setup({ types: { context: {} as { n: number }, events: {} as { type: 'start' } | ChildEvent } }).createMachine({
      id: 'counter',
      context: { n: 0 },
      initial: 'idle',
      states: {
        idle: { on: { start: 'waiting' } },
        waiting: { entry: spawnAgent('worker', { id: 'only-child' }), on: { 'agent.done': { actions: assign({ n: ({ context }) => context.n + 1 }) } } },
      },
    });
    const suite = pathTests({ machine: counter, events: [{ type: 'start' }], children: { worker: { done: [1] } } });
    expect(suite.paths.map((p) => p.name)).toEqual(['#1 start → agent.done(only-child) ⇒ waiting']);
  });

  it('refuses reports among the events (only the runtime sends them), and `children` keys no path spawns', () => {
    expect(() => pathTests({ ...options, events: [{ type: 'start' }, { type: 'agent.done', agentId: 'path-agent:a', output: null }] })).toThrow(
      /"agent\.done" is a child agent's report, which only the runtime sends; describe what children report with `children`/,
    );
    expect(() => pathTests({ ...options, children: { wroker: { done: [1] } } })).toThrow(/children\.wroker: no path spawns an agent of machine "wroker" \(spawned: worker\)/);
    expect(() => pathTests({ ...options, children: { worker: { response: [{ seq: 1, task: 't', response: 'r' }] } } })).toThrow(
      /children: no state of "boss" handles "agent\.response"/,
    );
  });
});

describe('the spawns of a path run', () => {
  it('are recorded and kept from the runtime: no child agent is created, none is refused', async () => {
    const store = await openSqliteStore(tempDbFile());
    const probe = new AgentProbe('b1', 1, 0);
    const runtime = await createRuntime({ store, machines: [{ name: 'boss', machine: bossMachine }], inspect: probe.inspect });
    try {
      await runtime.spawn('boss', { id: 'b1' });
      await runtime.send('b1', { type: 'start' });
      await expect.poll(() => probe.spawns.length).toBe(2);
      expect(probe.spawnsAt(1).map((s) => s.id)).toEqual(['b1:a', 'b1:b']);
      await new Promise((resolve) => setTimeout(resolve, 50));
      // `worker` is registered nowhere: a spawn the runtime saw would be refused, and reported back as agent.failed.
      expect(await store.getAgent('b1:a')).toBeUndefined();
      expect(await store.getAgent('b1')).toMatchObject({ status: 'active', lastSeq: 2 });
    } finally {
      await runtime.close();
    }
  });
});

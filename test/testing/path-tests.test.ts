// (Long: the helper's every refusal and derivation, each with the small machine that shows it.)
// Unit tests of the path-test helper itself: what it derives, what it generates, and that a wrong
// expectation, a machine that does more than the path says, or a crash that changes something
// each make a case fail.
import { describe, expect, it } from 'vitest';
import { assign, createMachine, fromCallback, fromPromise, setup } from 'xstate';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { AWAIT_COMMIT_TAG, COMMITTED_EVENT } from '../../src/durable/commit-barrier.js';
import { checkCrashRun } from '../../src/testing/crash-check.js';
import { agentPathTestOptions, crashableStore, pathTests, PathTestError, ProcessCrashedError, type PathRunResult } from '../../src/testing/index.js';
import { failureOf } from '../helpers/path-failure.js';
import { tempDbFile } from '../helpers/temp.js';
import { approvalDefinition, approvalMachine } from './approval-machine.js';

const never = fromPromise<unknown, unknown>(() => new Promise(() => {}));

/** idle --start--> working (invokes `job`: done → finished, error → idle). */
const jobMachine = setup({ actors: { work: never } }).createMachine({
  id: 'job',
  initial: 'idle',
  states: {
    idle: { on: { start: 'working' } },
    working: { invoke: { id: 'job', src: 'work', onDone: 'finished', onError: 'idle' } },
    finished: { type: 'final' },
  },
});

/** a --x--> b --x--> c --x--> d, and a --y--> c: two routes to c, a longer one to d. */
const chainMachine = setup({}).createMachine({
  id: 'chain',
  initial: 'a',
  states: {
    a: { on: { x: 'b', y: 'c' } },
    b: { on: { x: 'c' } },
    c: { on: { x: 'd' } },
    d: {},
  },
});


/** idle --start--> saved (a commit barrier) --runtime.committed--> sending (invokes `send`: done → idle). */
const barrierMachine = setup({ actors: { send: never } }).createMachine({
  id: 'barrier',
  initial: 'idle',
  states: {
    idle: { on: { start: 'saved' } },
    saved: { tags: [AWAIT_COMMIT_TAG], on: { [COMMITTED_EVENT]: 'sending' } },
    sending: { invoke: { id: 'send', src: 'send', onDone: 'idle' } },
  },
});

const eventsOf = (suite: ReturnType<typeof pathTests>) => suite.paths.map((p) => p.steps.slice(1).map((s) => s.event.type));

describe('pathTests: synthetic events', () => {
  it('derives done and error events from the invokes, shaped as XState shapes them', () => {
    const suite = pathTests({ machine: jobMachine, events: [{ type: 'start' }] });
    expect(suite.invokes).toEqual([{ id: 'job', src: 'work', stateId: 'job.working', handlesDone: true, handlesError: true, driven: true }]);
    expect(suite.events.slice(1)).toEqual([
      { type: 'xstate.done.actor.job', output: undefined, actorId: 'job' },
      { type: 'xstate.error.actor.job', error: new Error('"job" failed (path test)'), actorId: 'job' },
    ]);
  });

  it('derives only the kinds the chart handles, and takes outcomes by invoke id before src', () => {
    const options = agentPathTestOptions();
    const agent = pathTests({ ...options, simplePathDepth: 0, outcomes: { ...options.outcomes, sleepUntil: { done: ['late'] }, llmBackoff: { done: ['early'] } } });
    const byType = (type: string) => agent.events.filter((e) => e.type === type);
    expect(byType('xstate.done.actor.llmBackoff')).toEqual([{ type: 'xstate.done.actor.llmBackoff', output: 'early', actorId: 'llmBackoff' }]);
    expect(byType('xstate.done.actor.effectBackoff')).toEqual([{ type: 'xstate.done.actor.effectBackoff', output: 'late', actorId: 'effectBackoff' }]);
    // No invoke of the agent is left without an error handler, so the job machine without one shows it:
    const doneOnly = setup({ actors: { work: never } }).createMachine({
      initial: 'a',
      states: { a: { invoke: { id: 'w', src: 'work', onDone: 'b' } }, b: {} },
    });
    expect(pathTests({ machine: doneOnly, events: [] }).events.map((e) => e.type)).toEqual(['xstate.done.actor.w']);
  });

  it("explores the runtime's committed event only where the machine has a commit barrier, and refuses it as a user event", () => {
    expect(pathTests({ machine: jobMachine, events: [{ type: 'start' }] }).events.map((e) => e.type)).not.toContain(COMMITTED_EVENT);
    const suite = pathTests({ machine: barrierMachine, events: [{ type: 'start' }] });
    expect(suite.events.map((e) => e.type)).toEqual(['start', 'xstate.done.actor.send', COMMITTED_EVENT]);
    expect(() => pathTests({ machine: barrierMachine, events: [{ type: COMMITTED_EVENT }] })).toThrow(/runtime's own event/);
  });

  it('refuses what it cannot run faithfully, with a sentence saying what to do', () => {
    const inline = createMachine({ initial: 's', states: { s: { invoke: { src: fromPromise(async () => 1), onDone: 's' } } } });
    expect(() => pathTests({ machine: inline, events: [] })).toThrow(/inline actor logic.*setup\(\{ actors \}\)/);
    expect(() => pathTests({ machine: jobMachine, events: [{ type: 'xstate.done.actor.job' }] })).toThrow(/XState's own event/);
    expect(() => pathTests({ machine: jobMachine, events: [{ type: 'strat' }] })).toThrow(/handles "strat"/);
    expect(() => pathTests({ machine: jobMachine, events: [{ type: 'start' }], outcomes: { jbo: {} } })).toThrow(/outcomes\.jbo: no invoke/);
    expect(() => pathTests({ machine: jobMachine, events: [{ type: 'start' }], fakes: { work: never } })).toThrow(/fakes\.work: .*onDone\/onError/);
    expect(() => pathTests({ machine: approvalDefinition, input: { approver: 'ana' }, events: [{ type: 'approve' }] })).toThrow(
      /refused by the machine's schema for "approve"/,
    );
  });
});

describe('pathTests: generated paths', () => {
  it('keeps the longest of the shortest paths and one path per transition, prefixes removed', () => {
    const suite = pathTests({ machine: jobMachine, events: [{ type: 'start' }] });
    expect(suite.paths.map((p) => p.name)).toEqual(['#1 start → job.done ⇒ finished (done)', '#2 start → job.error ⇒ idle']);
    expect(suite.paths.map((p) => p.origin)).toEqual(['shortest', 'transition']);
    expect(suite.paths[0]!.steps.map((s) => [s.event.type, s.state, s.status])).toEqual([
      ['xstate.init', 'idle', 'active'],
      ['start', 'working', 'active'],
      ['xstate.done.actor.job', 'finished', 'done'],
    ]);
    expect(suite.crashCases.map((c) => c.crashAfter)).toEqual([0, 1, 2, 0, 1, 2]);
  });

  it('adds the simple paths up to the depth bound', () => {
    expect(eventsOf(pathTests({ machine: chainMachine, events: [{ type: 'x' }, { type: 'y' }], simplePathDepth: 0 }))).toEqual([
      ['y', 'x'],
      ['x', 'x'],
    ]);
    expect(eventsOf(pathTests({ machine: chainMachine, events: [{ type: 'x' }, { type: 'y' }], simplePathDepth: 3 }))).toEqual([
      ['y', 'x'],
      ['x', 'x', 'x'],
    ]);
  });

  it('reports a transition no path takes as missing from the coverage', () => {
    const suite = pathTests({
      machine: approvalDefinition,
      input: { approver: 'ana' },
      events: [{ type: 'submit', title: 'Chair', amount: 300 }, { type: 'approve', by: 'ana' }],
      outcomes: { notify: { done: [{ messageId: 'm' }], error: [] } }, // no failed notification explored
    });
    expect(suite.coverage.transitions.missing).toContain('approval.draft: cancel → approval.cancelled');
    expect(suite.coverage.transitions.missing).toContain('approval.notifying: xstate.error.actor.notify → approval.notifyFailed');
    expect(suite.coverage.transitions.missing).toContain('approval.draft: submit #1 [isSmall] → approval.approved');
    expect(suite.coverage.states.missing).toEqual(['approval.notifyFailed', 'approval.rejected', 'approval.cancelled']);
  });

  it('keeps the default projection finite, and explains an unbounded custom one', () => {
    const counter = setup({ types: { context: {} as { n: number } } }).createMachine({
      context: { n: 0 },
      on: { inc: { actions: assign({ n: ({ context }) => context.n + 1 }) } },
    });
    expect(pathTests({ machine: counter, events: [{ type: 'inc' }] }).paths).toHaveLength(1); // n: 0, 1, 2, 3, ">3"
    expect(() => pathTests({ machine: counter, events: [{ type: 'inc' }], serializeState: (v) => String(v.context.n), limit: 50 })).toThrow(
      /unbounded value.*serializeState/,
    );
  });
});

describe('pathTests: running a case', () => {
  it('fails a case whose expected state is wrong, naming the step', async () => {
    const suite = pathTests({ machine: jobMachine, events: [{ type: 'start' }] });
    const path = suite.paths[0]!;
    path.steps[1] = { ...path.steps[1]!, state: 'nowhere' };
    const error = await failureOf(path.run());
    expect(error).toBeInstanceOf(PathTestError);
    expect(error.message).toMatch(/^step 1\/2 \(start\): expected state nowhere, but checkpoint 2 \(after start\) holds working/);
  });

  it('fails a case whose expected projection is wrong', async () => {
    const path = pathTests({ machine: jobMachine, events: [{ type: 'start' }] }).paths[0]!;
    path.steps[2] = { ...path.steps[2]!, key: '"something else"' };
    expect((await failureOf(path.run())).message).toMatch(/step 2\/2 \(job\.done\): expected the projection "something else"/);
  });

  it('fails a case whose event the machine ignores, once the step timeout is over', async () => {
    const path = pathTests({ machine: approvalDefinition, input: { approver: 'ana' }, events: [{ type: 'cancel' }, { type: 'retry' }], stepTimeoutMs: 200 })
      .paths[0]!;
    path.steps[1] = { ...path.steps[1]!, event: { type: 'retry' } }; // draft ignores retry
    expect((await failureOf(path.run())).message).toMatch(/step 1\/1 \(retry\): expected the transition to cancelled \(done\) to be committed within 200 ms/);
  });

  it('fails a case when the machine does more than the path says', async () => {
    // `ping` runs on its own (a fake) and sends `pong`, which the paths do not explore.
    const pinger = setup({ actors: { work: never, ping: fromCallback(() => {}) } }).createMachine({
      id: 'pinger',
      initial: 'idle',
      states: {
        idle: { on: { start: 'waiting' } },
        waiting: { invoke: [{ id: 'job', src: 'work', onDone: 'finished' }, { id: 'ping', src: 'ping' }], on: { pong: 'ponged' } },
        ponged: {},
        finished: {},
      },
    });
    const noisy = fromCallback(({ sendBack }) => sendBack({ type: 'pong' }));
    const suite = pathTests({ machine: pinger, events: [{ type: 'start' }], fakes: { ping: noisy }, stepTimeoutMs: 300 });
    expect(suite.paths.map((p) => p.name)).toEqual(['#1 start → job.done ⇒ finished']);
    expect((await failureOf(suite.paths[0]!.run())).message).toMatch(/^step 1\/2 \(start\): expected exactly one transition for this step, but another one was committed \(seq 3, event pong, state ponged\)/);
  });

  it('runs each case on a real runtime: the path settles the invoked actors through the gate, and a crash re-starts the running one', async () => {
    const suite = pathTests({
      machine: approvalDefinition,
      input: { approver: 'ana' },
      events: [{ type: 'submit', title: 'Desk', amount: 400 }, { type: 'approve', by: 'ana' }],
      outcomes: { notify: { done: [{ messageId: 'm-1' }] } },
    });
    const path = suite.paths.find((p) => p.steps.at(-1)!.state === 'approved')!;
    expect(path.steps.map((s) => s.state)).toEqual(['draft', 'notifying', 'awaitingDecision', 'approved']);
    const crash = suite.crashCases.find((c) => c.path === path && c.crashAfter === 1)!;
    const { reference, crashed } = await crash.run();
    const notify = { id: 'notify', src: 'notify', input: { to: 'ana', title: 'Desk', reminder: 0 } };
    expect(reference.starts).toEqual([{ incarnation: 1, afterStep: 1, ...notify }]);
    expect(crashed.restarted).toEqual([notify]);
    expect(crashed.starts).toEqual([
      { incarnation: 1, afterStep: 1, ...notify },
      { incarnation: 2, afterStep: 1, ...notify },
    ]);
    expect(crashed.actions).toEqual(reference.actions);
    expect(reference.actions).toEqual([
      { seq: 3, action: 'notify', payload: { id: 'notify', input: notify.input }, result: { ok: true, output: { messageId: 'm-1' } } },
    ]);
    expect(crashed).toMatchObject({ state: 'approved', status: 'done', checkpoints: 4 });
  });
});

describe('pathTests: the crash comparison', () => {
  it('follows an explicit error outcome the chart does not handle into status error, crash or no crash', async () => {
    const fragile = setup({ actors: { work: never } }).createMachine({
      id: 'fragile',
      initial: 'idle',
      states: { idle: { on: { start: 'working' } }, working: { invoke: { id: 'job', src: 'work', onDone: 'finished' } }, finished: { type: 'final' } },
    });
    const suite = pathTests({ machine: fragile, events: [{ type: 'start' }], outcomes: { job: { error: [new Error('boom')] } } });
    const path = suite.paths.find((p) => p.steps.at(-1)!.status === 'error')!;
    expect(path.name).toBe('#2 start → job.error ⇒ working (error)');
    expect(await path.run()).toMatchObject({ state: 'working', status: 'error' });
    const cases = suite.crashCases.filter((x) => x.path === path);
    expect(cases.map((c) => c.crashAfter)).toEqual([0, 1, 2]); // after spawn, after start, after job.error
    for (const c of cases) await c.run();
  });

  it('fails when a restored run starts an actor with another input than the uninterrupted run', async () => {
    let calls = 0; // an impure invoke input: each run asks for a different thing
    const impure = setup({ actors: { work: never } }).createMachine({
      id: 'impure',
      initial: 'idle',
      states: {
        idle: { on: { start: 'working' } },
        working: { invoke: { id: 'job', src: 'work', input: () => ({ call: ++calls }), onDone: 'finished' } },
        finished: { type: 'final' },
      },
    });
    const suite = pathTests({ machine: impure, events: [{ type: 'start' }] });
    expect((await failureOf(suite.crashCases[0]!.run())).message).toMatch(/after a crash at step 0 an actor was started again.*\n\s+job \(work\) with input \{"call":\d+\}, started by process 2/);
  });

  it('fails when the final context differs from the uninterrupted run, unless `comparable` maps the difference out', async () => {
    let runs = 0;
    const stamped = setup({ types: { context: {} as { stamp: string } } }).createMachine({
      id: 'stamped',
      context: { stamp: '' },
      initial: 'idle',
      states: { idle: { on: { start: { target: 'started', actions: assign({ stamp: () => `run ${++runs}` }) } } }, started: {} },
    });
    const options = { machine: stamped, events: [{ type: 'start' }], serializeState: (v: { value: unknown }) => JSON.stringify(v.value) };
    expect((await failureOf(pathTests(options).crashCases[0]!.run())).message).toMatch(/final context differs[\s\S]*expected \{"stamp":"run \d+"\}/);
    await expect(pathTests({ ...options, comparable: { context: () => 'any stamp' } }).crashCases[0]!.run()).resolves.toBeDefined();
  });

  it('fails when an actor whose result was committed is started again', () => {
    const llm = (incarnation: number, afterStep: number) => ({ incarnation, afterStep, id: 'llm', src: 'callLlm', input: { task: 't1' } });
    const run = (starts: PathRunResult['starts']): PathRunResult => ({
      state: 'idle', status: 'active', context: {}, checkpoints: 5, actions: [], effects: [], starts, restarted: [], spawns: [], delays: [], rearmed: [],
    });
    const same = { context: (c: unknown) => c, input: (_: string, i: unknown) => i, spawnInput: (_: string, i: unknown) => i };
    expect(() => checkCrashRun(run([llm(1, 1)]), run([llm(1, 1)]), 3, same)).not.toThrow();
    expect(() => checkCrashRun(run([llm(1, 1)]), run([llm(1, 1), llm(2, 3)]), 3, same)).toThrow(
      /started again although its result was already committed[\s\S]*llm \(callLlm\) with input \{"task":"t1"\}, started by process 2 after step 3/,
    );
    expect(() => checkCrashRun(run([llm(1, 1)]), run([]), 3, same)).toThrow(/never happened/);
  });
});

describe('pathTests: commit barriers', () => {
  const suite = pathTests({ machine: barrierMachine, events: [{ type: 'start' }] });

  it('never ends a path at a barrier, and takes no other event there: the runtime releases it at once', () => {
    expect(eventsOf(suite)).toEqual([['start', COMMITTED_EVENT, 'xstate.done.actor.send']]);
    expect(suite.coverage.transitions.missing).toEqual([]);
  });

  it('runs the path with the runtime sending the committed event, and crashes between the barrier and its release', async () => {
    const [path] = suite.paths;
    const reference = await path!.run();
    expect(reference).toMatchObject({ state: 'idle', checkpoints: 4, starts: [{ id: 'send', afterStep: 2, incarnation: 1 }] });
    const atBarrier = suite.crashCases.find((c) => c.crashAfter === 1)!;
    expect(atBarrier.name).toMatch(/crash after 1\/3 in saved$/);
    const { crashed } = await atBarrier.run();
    // The first process was cut off before its release committed: the effect starts only in the second.
    expect(crashed.starts).toEqual([expect.objectContaining({ id: 'send', incarnation: 2 })]);
    expect(crashed.checkpoints).toBe(4);
  });
});

describe('crashableStore', () => {
  it('cuts a process off the database without closing it; what it committed stays for the next one', async () => {
    const file = tempDbFile();
    const raw = await openSqliteStore(file);
    const { store, crash } = crashableStore(raw);
    await store.createAgent({ id: 'a1', machine: 'approval', machineVersion: '1', input: {}, createdAt: new Date().toISOString() });
    crash();
    await expect(store.getAgent('a1')).rejects.toBeInstanceOf(ProcessCrashedError);
    expect(raw.db.open).toBe(true);
    const next = await openSqliteStore(file);
    expect(await next.getAgent('a1')).toMatchObject({ id: 'a1', status: 'active' });
    await next.close();
    await raw.close();
  });

  it('crashes the process the moment it tries to commit a checkpoint at or past the given seq', async () => {
    const raw = await openSqliteStore(tempDbFile());
    const { store, crashBeforeCheckpoint } = crashableStore(raw);
    const createdAt = new Date().toISOString();
    await store.createAgent({ id: 'a1', machine: 'approval', machineVersion: '1', input: {}, createdAt });
    crashBeforeCheckpoint(2);
    const checkpoint = (seq: number) => ({
      kind: 'checkpoint' as const, agentId: 'a1', seq, inboxPosition: 0, createdAt, machineVersion: '1', eventType: 'x',
      state: 's', status: 'active' as const, progress: 0, snapshot: '{}', actions: [],
    });
    await store.commit([checkpoint(1)]);
    await expect(store.commit([checkpoint(2)])).rejects.toBeInstanceOf(ProcessCrashedError);
    await expect(store.getAgent('a1')).rejects.toBeInstanceOf(ProcessCrashedError);
    expect((await raw.getAgent('a1'))?.lastSeq).toBe(1);
    await raw.close();
  });
});

describe('approval machine (sanity)', () => {
  it('is a plain XState machine with one named actor', () => {
    expect(Object.keys(approvalMachine.implementations.actors)).toEqual(['notify']);
  });
});

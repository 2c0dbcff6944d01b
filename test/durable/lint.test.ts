// The durability linter: one small machine per finding code, each with exactly that problem and no
// other; the reference agent and the docs' example; and registration (errors refuse the machine,
// warnings are logged, `lint.ignore` silences a warning but never an error).
import { describe, expect, it } from 'vitest';
import { assign, createMachine, fromCallback, fromPromise, fromTransition, raise, setup, spawnChild, type AnyStateMachine } from 'xstate';
import { MachineNotDurableError } from '../../src/core/errors.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import type { MachineDefinition } from '../../src/durable/definition.js';
import { LINT_CODES, lintDefinition, lintMachine, type LintCode } from '../../src/durable/lint.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import { registerMachine } from '../../src/runtime/registered-machine.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { supervisorDefinition } from '../docs/examples/supervisor-machine.js';
import { digestMachine } from '../docs/examples/digest-machine.js';
import { runtimesClosedAfterEach, startRuntime } from '../helpers/runtime.js';
import { tempDbFile } from '../helpers/temp.js';

const work = fromPromise(async () => 'done');
const actors = { work };

/** A chart with one problem, where it is, and what its message must say. */
interface Case {
  machine: AnyStateMachine;
  path: string;
  message: RegExp;
  input?: unknown;
}

// A Record over every code: a code added to the linter without a case here does not compile.
const CASES: Record<LintCode, Case> = {
  unregistered_actor: {
    machine: setup({ actors }).createMachine({
      id: 'm',
      initial: 'a',
      states: { a: { invoke: { id: 'job', src: 'wrok' as 'work', onDone: 'b', onError: 'b' } }, b: { type: 'final' } },
    }),
    path: 'm.a',
    message: /Invoke "job" names the actor "wrok", which setup\(\{ actors \}\) does not register/,
  },
  inline_spawned_actor: {
    machine: createMachine({
      id: 'm',
      initial: 'a',
      states: { a: { entry: spawnChild(fromCallback(() => {}), { id: 'pinger' }), on: { go: 'b' } }, b: { type: 'final' } },
    }),
    path: 'm.a',
    message: /spawnChild is given inline actor logic.*spawn it by name/,
  },
  stateful_child: {
    machine: setup({ actors: { child: createMachine({ id: 'child', initial: 'x', states: { x: { on: { go: 'y' } }, y: {} } }) } }).createMachine({
      id: 'm',
      initial: 'a',
      states: { a: { invoke: { id: 'sub', src: 'child', onDone: 'b', onError: 'b' } }, b: { type: 'final' } },
    }),
    path: 'm.a',
    message: /Invoke "sub" runs "child", a state machine: .*Keep agents flat/,
  },
  context_not_json: {
    machine: setup({ types: { context: {} as Record<string, unknown>, input: {} as { at?: number } } }).createMachine({
      id: 'm',
      context: ({ input }) => ({ at: new Date(input.at ?? 0), tags: new Set(['a']), ok: { n: 1, s: 'x', list: [1, null] } }),
      on: { go: {} },
    }),
    path: 'm',
    message: /not plain JSON.*context\.at is a Date \(stored as an ISO string.*; context\.tags is a Set \(stored as \{\}/,
  },
  unknown_delay: {
    machine: setup({ delays: { soon: 10 } }).createMachine({
      id: 'm',
      initial: 'a',
      // XState fires a delay it cannot find at once.
      states: { a: { after: { sono: 'b' } }, b: { type: 'final' } },
    }),
    path: 'm.a',
    message: /after "sono" names the delay "sono", which setup\(\{ delays \}\) does not have: XState fires it at once/,
  },
  invoke_without_id: {
    machine: setup({ actors }).createMachine({
      id: 'm',
      initial: 'a',
      states: { a: { invoke: { src: 'work', onDone: 'b', onError: 'b' } }, b: { type: 'final' } },
    }),
    path: 'm.a',
    message: /An invoke of "work" has no id: XState names the child "0\.m\.a"/,
  },
  inline_invoked_actor: {
    machine: createMachine({
      id: 'm',
      initial: 'a',
      states: { a: { invoke: { id: 'job', src: fromPromise(async () => 1), onDone: 'b', onError: 'b' } }, b: { type: 'final' } },
    }),
    path: 'm.a',
    message: /Invoke "job" runs inline actor logic: .*"xstate\.invoke\.0\.m\.a"/,
  },
  invoke_without_error: {
    machine: setup({ actors }).createMachine({
      id: 'm',
      initial: 'a',
      states: { a: { invoke: { id: 'job', src: 'work', onDone: 'b' } }, b: { type: 'final' } },
    }),
    path: 'm.a',
    message: /Invoke "job" has no onError: .*xstate\.error\.actor\.job/,
  },
  spawn_without_id: {
    machine: setup({ actors }).createMachine({
      id: 'm',
      initial: 'a',
      states: { a: { entry: spawnChild('work'), on: { go: 'b' } }, b: { type: 'final' } },
    }),
    path: 'm.a',
    message: /spawnChild\("work"\) has no id: .*under the id "undefined"/,
  },
  dead_end: {
    machine: setup({}).createMachine({
      id: 'm',
      initial: 'a',
      states: { a: { on: { go: 'stuck' } }, stuck: {} },
    }),
    path: 'm.stuck',
    message: /State "m\.stuck" is not final and nothing leaves it or happens in it/,
  },
};

describe('lintMachine: one finding per problem, at its state, with its severity', () => {
  it.each(Object.entries(CASES) as [LintCode, Case][])('%s', (code, c) => {
    const findings = lintMachine(c.machine, 'input' in c ? { input: c.input } : {});
    expect(findings).toEqual([{ severity: LINT_CODES[code], code, path: c.path, message: expect.stringMatching(c.message) }]);
  });

  it('says which codes are errors (the runtime cannot run or restore it) and which are warnings', () => {
    const bySeverity = (s: string) => Object.keys(LINT_CODES).filter((code) => LINT_CODES[code as LintCode] === s);
    expect(bySeverity('error')).toEqual(['unregistered_actor', 'inline_spawned_actor', 'stateful_child', 'context_not_json', 'unknown_delay']);
    expect(bySeverity('warning')).toEqual(['invoke_without_id', 'inline_invoked_actor', 'invoke_without_error', 'spawn_without_id', 'dead_end']);
  });

  it('also finds a stateful child given as transition logic, an unregistered or machine child spawned, and a delayed event', () => {
    const machine = setup({
      actors: { counter: fromTransition((n: number) => n + 1, 0), child: createMachine({}) },
      delays: { soon: 5 },
      actions: { spawnChild: spawnChild('child', { id: 'c' }) },
    }).createMachine({
      id: 'm',
      initial: 'a',
      states: {
        a: {
          invoke: { id: 'count', src: 'counter', onError: 'b' },
          on: {
            go: { target: 'b', actions: [spawnChild('nobody' as 'child', { id: 'n' }), 'spawnChild'] },
            late: { actions: [raise({ type: 'go' }, { delay: 'soon' }), raise({ type: 'go' }, { delay: 'later' as 'soon' })] },
          },
        },
        b: { type: 'final' },
      },
    });
    expect(lintMachine(machine).map((f) => ({ path: f.path, code: f.code, message: f.message }))).toEqual([
      { path: 'm.a', code: 'stateful_child', message: expect.stringMatching(/^Invoke "count" runs "counter", transition logic \(fromTransition\)/) },
      { path: 'm.a', code: 'unregistered_actor', message: expect.stringMatching(/^spawnChild names the actor "nobody"/) },
      { path: 'm.a', code: 'stateful_child', message: expect.stringMatching(/^spawnChild\("child"\) runs "child", a state machine/) },
      { path: 'm.a', code: 'unknown_delay', message: expect.stringMatching(/^A delayed event names the delay "later"/) },
    ]);
  });

  it('takes a number, a named delay or a delay function, in `after` and in delayed events', () => {
    const machine = setup({ delays: { soon: ({ context }: { context: { ms: number } }) => context.ms } }).createMachine({
      id: 'm',
      context: { ms: 5 },
      initial: 'a',
      states: {
        a: {
          entry: [raise({ type: 'go' }, { delay: 'soon' }), raise({ type: 'go' }, { delay: ({ context }) => context.ms * 2 }), raise({ type: 'go' }, { delay: 10 })],
          after: { 1000: 'b', soon: 'b' },
          on: { go: 'b' },
        },
        b: { type: 'final' },
      },
    });
    expect(lintMachine(machine)).toEqual([]);
  });

  it('counts an error handler on an ancestor or a wildcard, and a transition on an ancestor as a way out', () => {
    const machine = setup({ actors }).createMachine({
      id: 'm',
      initial: 'outer',
      on: { reset: '.outer' },
      states: {
        outer: {
          initial: 'a',
          on: { 'xstate.error.actor.one': '.idle' },
          states: {
            a: { invoke: { id: 'one', src: 'work', onDone: 'b' } },
            b: { invoke: { id: 'two', src: 'work', onDone: 'idle' }, on: { 'xstate.error.*': 'idle' } },
            idle: {},
          },
        },
      },
    });
    expect(lintMachine(machine)).toEqual([]);
  });

  it('finds what JSON does not give back in the initial context: functions, BigInt, NaN, undefined in arrays, instances, cycles', () => {
    class Point {
      constructor(readonly x: number) {}
    }
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    const machine = createMachine({
      id: 'm',
      context: { fn: () => 1, big: 10n, nan: Number.NaN, list: [1, undefined], point: new Point(1), map: new Map(), err: new Error('x'), cyclic, fine: { a: [{ b: null }], c: undefined } },
      on: { go: {} },
    });
    const [finding, ...rest] = lintMachine(machine);
    expect(rest).toEqual([]);
    expect(finding).toMatchObject({ severity: 'error', code: 'context_not_json', path: 'm' });
    for (const part of [
      'context.fn is a function', 'context.big is a BigInt', 'context.nan is NaN (stored as null)', 'context.list[1] is undefined (stored as null)',
      'context.point is an instance of Point', 'and 3 more',
    ]) {
      expect(finding!.message).toContain(part);
    }
    // The rest, past the first five.
    const all = lintMachine(createMachine({ id: 'm', context: { map: new Map(), err: new Error('x'), cyclic }, on: { go: {} } }))[0]!.message;
    expect(all).toMatch(/context\.map is a Map.*context\.err is an Error.*context\.cyclic\.self refers back to an object that holds it/);
  });

  it('computes the context from the input it is given, and checks nothing when the context factory throws', () => {
    const machine = setup({ types: { input: {} as { when: number } } }).createMachine({
      id: 'm',
      context: ({ input }) => {
        if (typeof input.when !== 'number') throw new Error('when?');
        return { when: input.when };
      },
      on: { go: {} },
    });
    expect(lintMachine(machine)).toEqual([]);
    expect(lintMachine(machine, { input: { when: 5 } })).toEqual([]);
    expect(lintMachine(machine, { checkContext: false })).toEqual([]);
  });
});

describe('the machines this repository ships lint clean', () => {
  it('the reference agent has no findings', () => {
    expect(lintMachine(agentDefinition({ llm: createSimulatedLlm() }).machine)).toEqual([]);
    expect(lintDefinition(agentDefinition({ llm: createSimulatedLlm() }))).toEqual([]);
  });

  it("the docs' digest example lints clean", () => {
    expect(lintMachine(digestMachine)).toEqual([]);
  });

  it("the docs' supervisor example lints clean (its children are spawned with spawnAgent, its deadline is a named delay)", () => {
    expect(lintDefinition(supervisorDefinition)).toEqual([]);
    expect(lintMachine(supervisorDefinition.machine, { input: { question: 'Why?' } })).toEqual([]);
  });
});

describe('registration', () => {
  const start = runtimesClosedAfterEach();
  const broken: MachineDefinition = { name: 'broken', machine: CASES.unregistered_actor.machine };
  const warned: MachineDefinition = { name: 'warned', machine: CASES.invoke_without_error.machine };

  it('refuses a machine with an error: createRuntime throws MachineNotDurableError, listing each error with its path', async () => {
    const store = await openSqliteStore(tempDbFile());
    try {
      const refusal = await startRuntime({ store, machines: [broken] }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refusal).toBeInstanceOf(MachineNotDurableError);
      expect(refusal).toMatchObject({ code: 'machine_not_durable', machine: 'broken', errors: [{ path: 'm.a', code: 'unregistered_actor' }] });
      const message = (refusal as Error).message;
      expect(message).toMatch(/^Machine "broken" is refused: the runtime cannot make it durable \(1 error; errors cannot be ignored\)\.\n/);
      expect(message).toContain('  m.a  unregistered_actor: Invoke "job" names the actor "wrok"');
    } finally {
      await store.close();
    }
  });

  it('refuses it even when its definition lists the error code in lint.ignore', () => {
    // The types allow only warning codes; from JavaScript, an error code listed there changes nothing.
    const ignoring = { ...broken, lint: { ignore: ['unregistered_actor'] } } as unknown as MachineDefinition;
    expect(lintDefinition(ignoring)).toMatchObject([{ code: 'unregistered_actor' }]);
    expect(() => registerMachine(ignoring)).toThrow(MachineNotDurableError);
  });

  it('logs each warning with the machine, path and code, and runs the machine', async () => {
    const t = await start({ machines: [warned], logs: 'captured' });
    expect(t.runtime.machine('warned').lintWarnings).toMatchObject([{ code: 'invoke_without_error', path: 'm.a' }]);
    expect(t.logs.filter((l) => l.level === 40)).toEqual([
      expect.objectContaining({ machine: 'warned', path: 'm.a', code: 'invoke_without_error', msg: expect.stringContaining('Invoke "job" has no onError') }),
    ]);
    await t.runtime.spawn('warned', { id: 'w1' });
  });

  it('logs nothing for a warning the definition ignores', async () => {
    const t = await start({ machines: [{ ...warned, lint: { ignore: ['invoke_without_error'] } }], logs: 'captured' });
    expect(t.runtime.machine('warned').lintWarnings).toEqual([]);
    expect(t.logs.filter((l) => l.level === 40)).toEqual([]);
  });

  it('lints the context from what the input schema makes of {}, and not at all when the schema refuses {}', async () => {
    const { z } = await import('zod');
    const dated = setup({ types: { input: {} as { at: number } } }).createMachine({
      id: 'dated',
      context: ({ input }) => ({ at: new Date(input.at) }),
      on: { go: { actions: assign({}) } },
    });
    expect(lintDefinition({ machine: dated, input: z.object({ at: z.number().default(0) }) })).toMatchObject([{ code: 'context_not_json' }]);
    expect(lintDefinition({ machine: dated, input: z.object({ at: z.number() }) })).toEqual([]);
  });
});

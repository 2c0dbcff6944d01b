/**
 * Conformance cases: chart structure (history, parallel regions, final states and `onDone`,
 * eventless transitions, guards, deep targets, internal and reentering transitions, initial
 * states), adapted from XState's history, parallel, final, transient, guards, deep,
 * internalTransitions and initial tests. Entry and exit actions are traced (`entry:<state>`,
 * `exit:<state>`) so the order in which the chart enters and leaves states is compared.
 */
import { and, assign, createMachine, not, or, raise, sendParent, sendTo, setup, stateIn, fromCallback } from 'xstate';
import type { EventObject } from 'xstate';
import { z } from 'zod';
import type { ConformanceCase, Trace } from '../case.js';

const HISTORY = 'packages/core/test/history.test.ts';
const PARALLEL = 'packages/core/test/parallel.test.ts';
const FINAL = 'packages/core/test/final.test.ts';
const TRANSIENT = 'packages/core/test/transient.test.ts';
const GUARDS = 'packages/core/test/guards.test.ts';
const DEEP = 'packages/core/test/deep.test.ts';
const INTERNAL = 'packages/core/test/internalTransitions.test.ts';
const INITIAL = 'packages/core/test/initial.test.ts';

/** An event with a payload, for a step. */
const ev = (type: string, payload: Record<string, unknown>): EventObject => ({ type, ...payload });

/** Entry and exit actions that trace a state's name: spread into a state node. */
const traced = (trace: Trace, name: string) => ({
  entry: () => trace(`entry:${name}`),
  exit: () => trace(`exit:${name}`),
});

/** A two-region parallel chart with shallow and deep history at each level (the parallel history tests). */
const parallelWithHistories = (trace: Trace, offOn: Record<string, unknown>) =>
  setup({}).createMachine({
    id: 'panel',
    initial: 'off',
    states: {
      off: { ...traced(trace, 'off'), on: { SWITCH: 'on', ...offOn } },
      on: {
        ...traced(trace, 'on'),
        type: 'parallel',
        on: { POWER: 'off' },
        states: {
          A: {
            ...traced(trace, 'A'),
            initial: 'B',
            states: {
              B: { ...traced(trace, 'B'), on: { INNER_A: 'C' } },
              C: {
                ...traced(trace, 'C'),
                initial: 'D',
                states: { D: { ...traced(trace, 'D'), on: { INNER_A: 'E' } }, E: traced(trace, 'E') },
              },
              hist: { type: 'history' },
              deepHist: { type: 'history', history: 'deep' },
            },
          },
          K: {
            ...traced(trace, 'K'),
            initial: 'L',
            states: {
              L: { ...traced(trace, 'L'), on: { INNER_K: 'M' } },
              M: {
                ...traced(trace, 'M'),
                initial: 'N',
                states: { N: { ...traced(trace, 'N'), on: { INNER_K: 'O' } }, O: traced(trace, 'O') },
              },
              hist: { type: 'history' },
              deepHist: { type: 'history', history: 'deep' },
            },
          },
          hist: { type: 'history' },
          deepHist: { type: 'history', history: 'deep' },
        },
      },
    },
  });

/** A chart three levels deep on each side (the deep transition tests). */
const deepChart = (trace: Trace, handlers: { root?: Record<string, string>; A?: Record<string, string>; D?: Record<string, string> }) =>
  setup({}).createMachine({
    id: 'root',
    initial: 'A',
    on: handlers.root ?? {},
    states: {
      DONE: traced(trace, 'DONE'),
      A: {
        ...traced(trace, 'A'),
        on: handlers.A ?? {},
        initial: 'B',
        states: {
          B: {
            ...traced(trace, 'B'),
            initial: 'C',
            states: {
              C: {
                ...traced(trace, 'C'),
                initial: 'D',
                states: { D: { ...traced(trace, 'D'), on: handlers.D ?? {} } },
              },
            },
          },
        },
      },
      P: {
        ...traced(trace, 'P'),
        initial: 'Q',
        states: {
          Q: {
            ...traced(trace, 'Q'),
            initial: 'R',
            states: { R: { ...traced(trace, 'R'), initial: 'S', states: { S: traced(trace, 'S') } } },
          },
        },
      },
    },
  });

const ENTER_A_TO_D = ['entry:A', 'entry:B', 'entry:C', 'entry:D'];
const EXIT_D_TO_A = ['exit:D', 'exit:C', 'exit:B', 'exit:A'];
const ENTER_P_TO_S = ['entry:P', 'entry:Q', 'entry:R', 'entry:S'];

export const cases: ConformanceCase[] = [
  // ---------------------------------------------------------------- history
  {
    id: 'chart-history-shallow',
    from: { file: HISTORY, test: 'history states › should go to the most recently visited state (explicit shallow history type)' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'lamp',
        initial: 'lit',
        states: {
          lit: {
            ...traced(trace, 'lit'),
            initial: 'dim',
            on: { TOGGLE: 'dark' },
            states: {
              dim: { ...traced(trace, 'dim'), on: { BRIGHTEN: 'bright' } },
              bright: traced(trace, 'bright'),
              last: { type: 'history', history: 'shallow' },
            },
          },
          dark: { ...traced(trace, 'dark'), on: { TOGGLE: 'lit.last' } },
        },
      }),
    expectStart: { value: { lit: 'dim' }, trace: ['entry:lit', 'entry:dim'] },
    steps: [
      { send: { type: 'BRIGHTEN' }, expect: { value: { lit: 'bright' }, trace: ['exit:dim', 'entry:bright'] } },
      { send: { type: 'TOGGLE' }, expect: { value: 'dark', trace: ['exit:bright', 'exit:lit', 'entry:dark'] } },
      { send: { type: 'TOGGLE' }, expect: { value: { lit: 'bright' }, trace: ['exit:dark', 'entry:lit', 'entry:bright'] } },
    ],
  },
  {
    id: 'chart-history-updated-after-reentry',
    from: { file: HISTORY, test: 'history states › should go to the most recently visited state (no explicit history type)' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'radio',
        initial: 'playing',
        states: {
          playing: {
            ...traced(trace, 'playing'),
            initial: 'fm',
            on: { MUTE: 'muted' },
            states: {
              fm: { ...traced(trace, 'fm'), on: { BAND: 'am' } },
              am: { ...traced(trace, 'am'), on: { BAND: 'fm' } },
              resume: { type: 'history' },
            },
          },
          muted: { ...traced(trace, 'muted'), on: { MUTE: 'playing.resume' } },
        },
      }),
    steps: [
      { send: { type: 'BAND' }, expect: { value: { playing: 'am' } } },
      { send: { type: 'MUTE' }, expect: { value: 'muted' } },
      { send: { type: 'MUTE' }, expect: { value: { playing: 'am' }, trace: ['entry:playing', 'entry:am'] } },
      { send: { type: 'BAND' }, expect: { value: { playing: 'fm' } } },
      { send: { type: 'MUTE' }, expect: { value: 'muted' } },
      { send: { type: 'MUTE' }, expect: { value: { playing: 'fm' }, trace: ['entry:playing', 'entry:fm'] } },
    ],
  },
  {
    id: 'chart-history-never-visited',
    from: { file: HISTORY, test: 'history states › should go to the initial state when no history present (no explicit history type)' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'fresh',
        initial: 'off',
        states: {
          off: { ...traced(trace, 'off'), on: { POWER: 'on.hist' } },
          on: {
            ...traced(trace, 'on'),
            initial: 'first',
            on: { POWER: 'off' },
            states: {
              first: { ...traced(trace, 'first'), on: { SWITCH: 'second' } },
              second: traced(trace, 'second'),
              hist: { type: 'history', history: 'shallow' },
            },
          },
        },
      }),
    steps: [
      { send: { type: 'POWER' }, expect: { value: { on: 'first' }, trace: ['exit:off', 'entry:on', 'entry:first'] } },
      { send: { type: 'SWITCH' }, expect: { value: { on: 'second' } } },
      { send: { type: 'POWER' }, expect: { value: 'off' } },
      { send: { type: 'POWER' }, expect: { value: { on: 'second' } } },
    ],
  },
  {
    id: 'chart-history-after-transient',
    from: { file: HISTORY, test: 'history states › should go to the most recently visited state by a transient transition' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'deployer',
        initial: 'idle',
        states: {
          idle: {
            id: 'idle',
            ...traced(trace, 'idle'),
            initial: 'absent',
            states: {
              absent: { ...traced(trace, 'absent'), on: { DEPLOY: '#deploying' } },
              present: { ...traced(trace, 'present'), on: { DEPLOY: '#deploying', DESTROY: '#destroying' } },
              hist: { type: 'history' },
            },
          },
          deploying: {
            id: 'deploying',
            ...traced(trace, 'deploying'),
            on: { SUCCESS: 'idle.present', FAILURE: 'idle.hist' },
          },
          destroying: { id: 'destroying', ...traced(trace, 'destroying'), always: { target: 'idle.absent' } },
        },
      }),
    steps: [
      { send: { type: 'DEPLOY' }, expect: { value: 'deploying' } },
      { send: { type: 'SUCCESS' }, expect: { value: { idle: 'present' } } },
      { send: { type: 'DESTROY' }, expect: { value: { idle: 'absent' }, trace: ['entry:destroying', 'exit:destroying', 'entry:absent'] } },
      { send: { type: 'DEPLOY' }, expect: { value: 'deploying' } },
      { send: { type: 'FAILURE' }, expect: { value: { idle: 'absent' }, trace: ['entry:idle', 'entry:absent'] } },
    ],
  },
  {
    id: 'chart-history-reenter',
    from: { file: HISTORY, test: 'history states › should reenter persisted state during reentering transition targeting a history state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'reenterHist',
        initial: 'a',
        states: {
          a: {
            ...traced(trace, 'a'),
            initial: 'a1',
            on: { REENTER: { target: '#aHist', reenter: true } },
            states: {
              a1: { ...traced(trace, 'a1'), on: { NEXT: 'a2' } },
              a2: traced(trace, 'a2'),
              a3: { type: 'history', id: 'aHist' },
            },
          },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: { a: 'a2' } } },
      { send: { type: 'REENTER' }, expect: { value: { a: 'a2' }, trace: ['exit:a2', 'entry:a2'] } },
    ],
  },
  {
    id: 'chart-history-default-target-machine-initial',
    from: { file: HISTORY, test: 'history states › should go to the configured default target when a history state is the initial state of the machine' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'histInitial',
        initial: 'foo',
        states: {
          foo: { type: 'history', target: 'bar' },
          bar: { ...traced(trace, 'bar'), on: { NEXT: 'baz' } },
          baz: { ...traced(trace, 'baz'), on: { BACK: 'foo' } },
        },
      }),
    expectStart: { value: 'bar', trace: ['entry:bar'] },
    steps: [
      { send: { type: 'NEXT' }, expect: { value: 'baz' } },
      // the root is never exited, so its history holds nothing and BACK takes the default target again
      { send: { type: 'BACK' }, expect: { value: 'bar', trace: ['exit:baz', 'entry:bar'] } },
    ],
  },
  {
    id: 'chart-history-default-target-transition-target',
    from: { file: HISTORY, test: "history states › should go to the configured default target when a history state is the initial state of the transition's target" },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'histTargetInitial',
        initial: 'foo',
        states: {
          foo: { ...traced(trace, 'foo'), on: { NEXT: 'bar' } },
          bar: {
            ...traced(trace, 'bar'),
            initial: 'baz',
            on: { LEAVE: 'foo' },
            states: {
              baz: { type: 'history', target: 'qwe' },
              qwe: { ...traced(trace, 'qwe'), on: { MOVE: 'asd' } },
              asd: traced(trace, 'asd'),
            },
          },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: { bar: 'qwe' }, trace: ['exit:foo', 'entry:bar', 'entry:qwe'] } },
      { send: { type: 'MOVE' }, expect: { value: { bar: 'asd' } } },
      { send: { type: 'LEAVE' }, expect: { value: 'foo' } },
      { send: { type: 'NEXT' }, expect: { value: { bar: 'asd' } } },
    ],
  },
  {
    id: 'chart-history-initial-actions-never-visited',
    from: {
      file: HISTORY,
      test: 'history states › should execute actions of the initial transition when a history state without a default target is targeted and its parent state was never visited yet',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'initActions',
        initial: 'a',
        states: {
          a: { ...traced(trace, 'a'), on: { NEXT: '#bHist' } },
          b: {
            ...traced(trace, 'b'),
            initial: { target: 'b1', actions: () => trace('initial:b') },
            states: { b1: traced(trace, 'b1'), b2: { id: 'bHist', type: 'history' } },
          },
        },
      }),
    steps: [{ send: { type: 'NEXT' }, expect: { value: { b: 'b1' }, trace: ['exit:a', 'entry:b', 'initial:b', 'entry:b1'] } }],
  },
  {
    id: 'chart-history-default-target-skips-initial-actions',
    from: {
      file: HISTORY,
      test: 'history states › should not execute actions of the initial transition when a history state with a default target is targeted and its parent state was never visited yet',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'skipInit',
        initial: 'a',
        states: {
          a: { ...traced(trace, 'a'), on: { NEXT: '#skipHist' } },
          b: {
            ...traced(trace, 'b'),
            initial: { target: 'b1', actions: () => trace('initial:b') },
            on: { NEXT: 'a' },
            states: {
              b1: traced(trace, 'b1'),
              b2: { id: 'skipHist', type: 'history', target: 'b3' },
              b3: traced(trace, 'b3'),
            },
          },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: { b: 'b3' }, trace: ['exit:a', 'entry:b', 'entry:b3'] } },
      { send: { type: 'NEXT' }, expect: { value: 'a' } },
      { send: { type: 'NEXT' }, expect: { value: { b: 'b3' }, trace: ['entry:b', 'entry:b3'] } },
    ],
  },
  {
    id: 'chart-history-visited-skips-initial-actions',
    from: {
      file: HISTORY,
      test: 'history states › should execute actions of the initial transition when a history state without a default target is targeted and its parent state was already visited',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'visitedInit',
        initial: 'a',
        states: {
          a: { ...traced(trace, 'a'), on: { NEXT: '#visitedHist' } },
          b: {
            ...traced(trace, 'b'),
            initial: { target: 'b1', actions: () => trace('initial:b') },
            on: { NEXT: 'a' },
            states: {
              b1: { ...traced(trace, 'b1'), on: { MOVE: 'b3' } },
              b2: { id: 'visitedHist', type: 'history' },
              b3: traced(trace, 'b3'),
            },
          },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: { b: 'b1' }, trace: ['initial:b', 'entry:b1'] } },
      { send: { type: 'MOVE' }, expect: { value: { b: 'b3' } } },
      { send: { type: 'NEXT' }, expect: { value: 'a' } },
      { send: { type: 'NEXT' }, expect: { value: { b: 'b3' }, trace: ['entry:b', 'entry:b3'] } },
    ],
  },
  {
    id: 'chart-history-restarts-invoke',
    from: { file: HISTORY, test: 'history states › should invoke an actor when reentering the stored configuration through the history state' },
    machine: (trace) =>
      setup({
        actors: {
          heartbeat: fromCallback(() => {
            trace('heartbeat:start');
          }),
        },
      }).createMachine({
        id: 'histInvoke',
        initial: 'running',
        states: {
          running: {
            ...traced(trace, 'running'),
            invoke: { id: 'beat', src: 'heartbeat' },
            on: { PING: { target: 'refresh' } },
          },
          refresh: { type: 'history' },
        },
      }),
    expectStart: { value: 'running', trace: ['heartbeat:start', 'entry:running'] },
    steps: [
      // targeting the root's history re-enters `running` (XState runs its entry, not its exit) and invokes again
      { send: { type: 'PING' }, expect: { value: 'running', trace: ['entry:running', 'heartbeat:start'] } },
      { send: { type: 'PING' }, expect: { value: 'running', trace: ['entry:running', 'heartbeat:start'] } },
    ],
  },
  {
    id: 'chart-history-restore-within-domain',
    from: {
      file: HISTORY,
      test: 'history states › should not enter ancestors of the entered history state that lie outside of the transition domain when restoring the stored history configuration',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'dialog',
        initial: 'closed',
        states: {
          closed: { id: 'closed', ...traced(trace, 'closed'), on: { 'BUTTON.CLICK': 'open.hist' } },
          open: {
            ...traced(trace, 'open'),
            initial: 'first',
            on: { 'BUTTON.CLICK': 'closed' },
            states: {
              hist: { type: 'history' },
              first: { ...traced(trace, 'first'), on: { NEXT: 'second' } },
              second: { ...traced(trace, 'second'), on: { CLOSE: '#closed' } },
            },
          },
        },
      }),
    steps: [
      { send: { type: 'BUTTON.CLICK' }, expect: { value: { open: 'first' }, trace: ['exit:closed', 'entry:open', 'entry:first'] } },
      { send: { type: 'NEXT' }, expect: { value: { open: 'second' } } },
      { send: { type: 'CLOSE' }, expect: { value: 'closed', trace: ['exit:second', 'exit:open', 'entry:closed'] } },
      { send: { type: 'BUTTON.CLICK' }, expect: { value: { open: 'second' }, trace: ['exit:closed', 'entry:open', 'entry:second'] } },
    ],
  },
  {
    id: 'chart-history-shallow-of-nested',
    from: { file: HISTORY, test: 'deep history states › should go to the shallow history' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'shallowNested',
        initial: 'on',
        states: {
          off: { ...traced(trace, 'off'), on: { POWER: 'on.history' } },
          on: {
            ...traced(trace, 'on'),
            initial: 'first',
            on: { POWER: 'off' },
            states: {
              first: { ...traced(trace, 'first'), on: { SWITCH: 'second' } },
              second: {
                ...traced(trace, 'second'),
                initial: 'A',
                states: {
                  A: { ...traced(trace, 'A'), on: { INNER: 'B' } },
                  B: { ...traced(trace, 'B'), initial: 'P', states: { P: traced(trace, 'P'), Q: traced(trace, 'Q') } },
                },
              },
              history: { type: 'history', history: 'shallow' },
            },
          },
        },
      }),
    steps: [
      { send: { type: 'SWITCH' }, expect: { value: { on: { second: 'A' } } } },
      { send: { type: 'INNER' }, expect: { value: { on: { second: { B: 'P' } } } } },
      { send: { type: 'POWER' }, expect: { value: 'off' } },
      { send: { type: 'POWER' }, expect: { value: { on: { second: 'A' } }, trace: ['entry:on', 'entry:second', 'entry:A'] } },
    ],
  },
  {
    id: 'chart-history-deepest',
    from: { file: HISTORY, test: 'deep history states › should go to the deepest history' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'deepest',
        initial: 'on',
        states: {
          off: { ...traced(trace, 'off'), on: { POWER: 'on.history' } },
          on: {
            ...traced(trace, 'on'),
            initial: 'first',
            on: { POWER: 'off' },
            states: {
              first: { ...traced(trace, 'first'), on: { SWITCH: 'second' } },
              second: {
                ...traced(trace, 'second'),
                initial: 'A',
                states: {
                  A: { ...traced(trace, 'A'), on: { INNER: 'B' } },
                  B: {
                    ...traced(trace, 'B'),
                    initial: 'P',
                    states: { P: { ...traced(trace, 'P'), on: { INNER: 'Q' } }, Q: traced(trace, 'Q') },
                  },
                },
              },
              history: { type: 'history', history: 'deep' },
            },
          },
        },
      }),
    steps: [
      { send: { type: 'SWITCH' } },
      { send: { type: 'INNER' } },
      { send: { type: 'INNER' }, expect: { value: { on: { second: { B: 'Q' } } } } },
      { send: { type: 'POWER' }, expect: { value: 'off', trace: ['exit:Q', 'exit:B', 'exit:second', 'exit:on', 'entry:off'] } },
      {
        send: { type: 'POWER' },
        expect: { value: { on: { second: { B: 'Q' } } }, trace: ['exit:off', 'entry:on', 'entry:second', 'entry:B', 'entry:Q'] },
      },
    ],
  },
  {
    id: 'chart-history-on-parallel-shallow',
    from: { file: HISTORY, test: 'parallel history states › should ignore parallel state history' },
    machine: (trace) => parallelWithHistories(trace, { PARALLEL_HIST: 'on.hist' }),
    steps: [
      { send: { type: 'SWITCH' }, expect: { value: { on: { A: 'B', K: 'L' } } } },
      { send: { type: 'INNER_A' }, expect: { value: { on: { A: { C: 'D' }, K: 'L' } } } },
      { send: { type: 'POWER' }, expect: { value: 'off' } },
      { send: { type: 'PARALLEL_HIST' }, expect: { value: { on: { A: 'B', K: 'L' } } } },
    ],
  },
  {
    id: 'chart-history-on-parallel-deep',
    from: { file: HISTORY, test: 'parallel history states › should re-enter each regions of parallel state correctly' },
    machine: (trace) => parallelWithHistories(trace, { DEEP_POWER: 'on.deepHist' }),
    steps: [
      { send: { type: 'SWITCH' } },
      { send: { type: 'INNER_A' } },
      { send: { type: 'INNER_A' } },
      { send: { type: 'INNER_K' } },
      { send: { type: 'INNER_K' }, expect: { value: { on: { A: { C: 'E' }, K: { M: 'O' } } } } },
      { send: { type: 'POWER' }, expect: { value: 'off' } },
      { send: { type: 'DEEP_POWER' }, expect: { value: { on: { A: { C: 'E' }, K: { M: 'O' } } }, trace: ['entry:on', 'entry:A', 'entry:C', 'entry:E'] } },
    ],
  },
  {
    id: 'chart-history-regions-shallow',
    from: { file: HISTORY, test: 'parallel history states › should re-enter multiple history states' },
    machine: (trace) => parallelWithHistories(trace, { PARALLEL_HISTORY: { target: ['on.A.hist', 'on.K.hist'] } }),
    steps: [
      { send: { type: 'SWITCH' } },
      { send: { type: 'INNER_A' } },
      { send: { type: 'INNER_A' } },
      { send: { type: 'INNER_K' } },
      { send: { type: 'INNER_K' } },
      { send: { type: 'POWER' }, expect: { value: 'off' } },
      { send: { type: 'PARALLEL_HISTORY' }, expect: { value: { on: { A: { C: 'D' }, K: { M: 'N' } } } } },
    ],
  },
  {
    id: 'chart-history-regions-partial',
    from: { file: HISTORY, test: 'parallel history states › should re-enter a parallel with partial history' },
    machine: (trace) => parallelWithHistories(trace, { SOME_HISTORY: { target: ['on.A.C', 'on.K.deepHist'] } }),
    steps: [
      { send: { type: 'SWITCH' } },
      { send: { type: 'INNER_A' } },
      { send: { type: 'INNER_A' } },
      { send: { type: 'INNER_K' } },
      { send: { type: 'INNER_K' } },
      { send: { type: 'POWER' }, expect: { value: 'off' } },
      { send: { type: 'SOME_HISTORY' }, expect: { value: { on: { A: { C: 'D' }, K: { M: 'O' } } } } },
    ],
  },
  {
    id: 'chart-history-parallel-never-visited',
    from: {
      file: HISTORY,
      test: 'history states › should enter the parallel default configuration when a deep history state without a default target is targeted and its parent parallel state was never visited yet',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'unvisitedParallel',
        initial: 'off',
        states: {
          off: { ...traced(trace, 'off'), on: { GO: 'on.hist' } },
          on: {
            ...traced(trace, 'on'),
            type: 'parallel',
            on: { STOP: 'off' },
            states: {
              regA: { ...traced(trace, 'regA'), initial: 'a1', states: { a1: { ...traced(trace, 'a1'), on: { MOVE: 'a2' } }, a2: traced(trace, 'a2') } },
              regB: { ...traced(trace, 'regB'), initial: 'b1', states: { b1: { ...traced(trace, 'b1'), on: { MOVE: 'b2' } }, b2: traced(trace, 'b2') } },
              hist: { type: 'history', history: 'deep' },
            },
          },
        },
      }),
    steps: [
      { send: { type: 'GO' }, expect: { value: { on: { regA: 'a1', regB: 'b1' } }, trace: ['entry:on', 'entry:regA', 'entry:a1', 'entry:regB', 'entry:b1'] } },
      { send: { type: 'MOVE' }, expect: { value: { on: { regA: 'a2', regB: 'b2' } } } },
      { send: { type: 'STOP' }, expect: { value: 'off' } },
      { send: { type: 'GO' }, expect: { value: { on: { regA: 'a2', regB: 'b2' } } } },
    ],
  },
  {
    id: 'chart-history-internal-target-default',
    from: {
      file: HISTORY,
      test: 'internal transition to a history state should enter default history state configuration if the containing state has never been exited yet',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'internalHist',
        initial: 'first',
        states: {
          first: { ...traced(trace, 'first'), on: { NEXT: 'second.other' } },
          second: {
            ...traced(trace, 'second'),
            initial: 'nested',
            on: { NEXT: { target: '.hist' } },
            states: { nested: traced(trace, 'nested'), other: traced(trace, 'other'), hist: { type: 'history' } },
          },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: { second: 'other' } } },
      { send: { type: 'NEXT' }, expect: { value: { second: 'nested' }, trace: ['exit:other', 'entry:nested'] } },
    ],
  },
  {
    id: 'chart-history-multistage',
    from: { file: HISTORY, test: 'multistage history states › should go to the most recently visited state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'engine',
        initial: 'running',
        states: {
          running: {
            ...traced(trace, 'running'),
            initial: 'normal',
            on: { POWER: 'off' },
            states: {
              normal: { ...traced(trace, 'normal'), on: { SWITCH_TURBO: 'turbo' } },
              turbo: { ...traced(trace, 'turbo'), on: { SWITCH_TURBO: 'normal' } },
              H: { type: 'history' },
            },
          },
          starting: { ...traced(trace, 'starting'), on: { STARTED: 'running.H' } },
          off: { ...traced(trace, 'off'), on: { POWER: 'starting' } },
        },
      }),
    steps: [
      { send: { type: 'SWITCH_TURBO' } },
      { send: { type: 'POWER' }, expect: { value: 'off' } },
      { send: { type: 'POWER' }, expect: { value: 'starting' } },
      { send: { type: 'STARTED' }, expect: { value: { running: 'turbo' }, trace: ['exit:starting', 'entry:running', 'entry:turbo'] } },
    ],
  },

  // ---------------------------------------------------------------- parallel
  {
    id: 'chart-parallel-entry-exit-order',
    from: { file: PARALLEL, test: 'parallel states › should have all parallel states represented in the state value (2)' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'wak',
        type: 'parallel',
        states: {
          wak1: {
            ...traced(trace, 'wak1'),
            initial: 'wak1sonA',
            on: { WAK1: '.wak1sonB' },
            states: { wak1sonA: traced(trace, 'wak1sonA'), wak1sonB: traced(trace, 'wak1sonB') },
          },
          wak2: {
            ...traced(trace, 'wak2'),
            initial: 'wak2sonA',
            on: { WAK2: '.wak2sonB' },
            states: { wak2sonA: traced(trace, 'wak2sonA'), wak2sonB: traced(trace, 'wak2sonB') },
          },
        },
      }),
    expectStart: { value: { wak1: 'wak1sonA', wak2: 'wak2sonA' }, trace: ['entry:wak1', 'entry:wak1sonA', 'entry:wak2', 'entry:wak2sonA'] },
    steps: [
      { send: { type: 'WAK2' }, expect: { value: { wak1: 'wak1sonA', wak2: 'wak2sonB' }, trace: ['exit:wak2sonA', 'entry:wak2sonB'] } },
      { send: { type: 'WAK1' }, expect: { value: { wak1: 'wak1sonB', wak2: 'wak2sonB' }, trace: ['exit:wak1sonA', 'entry:wak1sonB'] } },
    ],
  },
  {
    id: 'chart-parallel-word-reset',
    from: {
      file: PARALLEL,
      test: 'parallel states › should go from {"bold":"off","italics":"off","underline":"on","list":"bullets"} to {"bold":"off","italics":"off","underline":"off","list":"none"} on RESET',
    },
    machine: (trace) => {
      const toggle = (name: string, event: string) => ({
        ...traced(trace, name),
        initial: 'off',
        states: { on: { ...traced(trace, `${name}.on`), on: { [event]: 'off' } }, off: { ...traced(trace, `${name}.off`), on: { [event]: 'on' } } },
      });
      return setup({}).createMachine({
        id: 'word',
        type: 'parallel',
        on: { RESET: '#word' },
        states: {
          bold: toggle('bold', 'TOGGLE_BOLD'),
          underline: toggle('underline', 'TOGGLE_UNDERLINE'),
          italics: toggle('italics', 'TOGGLE_ITALICS'),
          list: {
            ...traced(trace, 'list'),
            initial: 'none',
            states: {
              none: { ...traced(trace, 'list.none'), on: { BULLETS: 'bullets', NUMBERS: 'numbers' } },
              bullets: { ...traced(trace, 'list.bullets'), on: { NONE: 'none', NUMBERS: 'numbers' } },
              numbers: { ...traced(trace, 'list.numbers'), on: { BULLETS: 'bullets', NONE: 'none' } },
            },
          },
        },
      });
    },
    steps: [
      { send: { type: 'TOGGLE_UNDERLINE' } },
      { send: { type: 'BULLETS' }, expect: { value: { bold: 'off', underline: 'on', italics: 'off', list: 'bullets' } } },
      { send: { type: 'TOGGLE_BOLD' }, expect: { value: { bold: 'on', underline: 'on', italics: 'off', list: 'bullets' } } },
      {
        send: { type: 'RESET' },
        expect: {
          value: { bold: 'off', underline: 'off', italics: 'off', list: 'none' },
          trace: ['exit:list.bullets', 'exit:list', 'exit:bold.on', 'exit:bold', 'entry:bold', 'entry:bold.off', 'entry:list', 'entry:list.none'],
        },
      },
    ],
  },
  {
    id: 'chart-parallel-raised-events',
    from: { file: PARALLEL, test: 'parallel states › should properly transition when raising events for a parallel state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'raising',
        type: 'parallel',
        states: {
          OUTER1: {
            initial: 'C',
            states: {
              A: { ...traced(trace, 'A'), entry: [() => trace('entry:A'), raise({ type: 'TURN_OFF' })], on: { EVENT_OUTER1_B: 'B', EVENT_OUTER1_C: 'C' } },
              B: { ...traced(trace, 'B'), entry: [() => trace('entry:B'), raise({ type: 'TURN_ON' })], on: { EVENT_OUTER1_A: 'A', EVENT_OUTER1_C: 'C' } },
              C: { ...traced(trace, 'C'), entry: [() => trace('entry:C'), raise({ type: 'CLEAR' })], on: { EVENT_OUTER1_A: 'A', EVENT_OUTER1_B: 'B' } },
            },
          },
          OUTER2: {
            type: 'parallel',
            states: {
              INNER1: {
                initial: 'ON',
                states: {
                  OFF: { ...traced(trace, 'INNER1.OFF'), on: { TURN_ON: 'ON' } },
                  ON: { ...traced(trace, 'INNER1.ON'), on: { CLEAR: 'OFF' } },
                },
              },
              INNER2: {
                initial: 'OFF',
                states: {
                  OFF: { ...traced(trace, 'INNER2.OFF'), on: { TURN_ON: 'ON' } },
                  ON: { ...traced(trace, 'INNER2.ON'), on: { TURN_OFF: 'OFF' } },
                },
              },
            },
          },
        },
      }),
    expectStart: { value: { OUTER1: 'C', OUTER2: { INNER1: 'OFF', INNER2: 'OFF' } }, trace: ['entry:C', 'exit:INNER1.ON', 'entry:INNER1.OFF'] },
    steps: [
      { send: { type: 'EVENT_OUTER1_B' }, expect: { value: { OUTER1: 'B', OUTER2: { INNER1: 'ON', INNER2: 'ON' } } } },
      { send: { type: 'EVENT_OUTER1_A' }, expect: { value: { OUTER1: 'A', OUTER2: { INNER1: 'ON', INNER2: 'OFF' } } } },
    ],
  },
  {
    id: 'chart-parallel-simultaneous',
    from: { file: PARALLEL, test: 'parallel states › should handle simultaneous orthogonal transitions' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'yamlEditor',
        type: 'parallel',
        context: { value: '' },
        states: {
          editing: {
            on: {
              CHANGE: {
                actions: [assign({ value: ({ event }) => (event as unknown as { value: string }).value }), () => trace('editing:change')],
              },
            },
          },
          status: {
            initial: 'unsaved',
            states: {
              unsaved: { ...traced(trace, 'unsaved'), on: { SAVE: { target: 'saved', actions: () => trace('save') } } },
              saved: { ...traced(trace, 'saved'), on: { CHANGE: 'unsaved' } },
            },
          },
        },
      }),
    steps: [
      { send: { type: 'SAVE' }, expect: { value: { editing: {}, status: 'saved' }, trace: ['exit:unsaved', 'save', 'entry:saved'] } },
      { send: ev('CHANGE', { value: 'something' }), expect: { value: { editing: {}, status: 'unsaved' }, trace: ['exit:saved', 'editing:change', 'entry:unsaved'] } },
      { send: ev('CHANGE', { value: 'more' }), expect: { value: { editing: {}, status: 'unsaved' } } },
    ],
  },
  {
    id: 'chart-parallel-region-initial-actions',
    from: {
      file: PARALLEL,
      test: 'parallel states › should execute actions of the initial transition of a parallel region when the parallel state is targeted with an explicit transition',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'regionInit',
        initial: 'a',
        states: {
          a: { ...traced(trace, 'a'), on: { NEXT: 'b' } },
          b: {
            ...traced(trace, 'b'),
            type: 'parallel',
            on: { BACK: 'a' },
            states: {
              c: { ...traced(trace, 'c'), initial: { target: 'c1', actions: () => trace('initial:c') }, states: { c1: traced(trace, 'c1') } },
              d: { ...traced(trace, 'd'), initial: { target: 'd1', actions: () => trace('initial:d') }, states: { d1: traced(trace, 'd1') } },
            },
          },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: { b: { c: 'c1', d: 'd1' } }, trace: ['exit:a', 'entry:b', 'entry:c', 'initial:c', 'entry:c1', 'entry:d', 'initial:d', 'entry:d1'] } },
      { send: { type: 'BACK' }, expect: { value: 'a', trace: ['exit:d1', 'exit:d', 'exit:c1', 'exit:c', 'exit:b', 'entry:a'] } },
      { send: { type: 'NEXT' }, expect: { trace: ['initial:c', 'initial:d'] } },
    ],
  },
  {
    id: 'chart-parallel-nested-complex',
    from: { file: PARALLEL, test: 'parallel states › transitions with nested parallel states › should properly transition when in a complex nested state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'nestedParallel',
        type: 'parallel',
        states: {
          OUTER1: {
            initial: 'OFF',
            states: {
              OFF: { ...traced(trace, 'OUTER1.OFF'), on: { EVENT_COMPLEX: 'ON', EVENT_SIMPLE: 'ON' } },
              ON: {
                ...traced(trace, 'OUTER1.ON'),
                type: 'parallel',
                states: {
                  NTJ0: {
                    initial: 'IDLE',
                    states: { IDLE: { ...traced(trace, 'NTJ0.IDLE'), on: { WORK_0: 'WORKING' } }, WORKING: { ...traced(trace, 'NTJ0.WORKING'), on: { IDLE_0: 'IDLE' } } },
                  },
                  NTJ1: {
                    initial: 'IDLE',
                    states: { IDLE: { ...traced(trace, 'NTJ1.IDLE'), on: { WORK_1: 'WORKING' } }, WORKING: { ...traced(trace, 'NTJ1.WORKING'), on: { IDLE_1: 'IDLE' } } },
                  },
                },
              },
            },
          },
          OUTER2: {
            initial: 'OFF',
            states: {
              OFF: { ...traced(trace, 'OUTER2.OFF'), on: { EVENT_COMPLEX: 'ON_COMPLEX', EVENT_SIMPLE: 'ON_SIMPLE' } },
              ON_SIMPLE: traced(trace, 'ON_SIMPLE'),
              ON_COMPLEX: {
                ...traced(trace, 'ON_COMPLEX'),
                type: 'parallel',
                states: {
                  INNER1: { initial: 'OFF', states: { OFF: traced(trace, 'INNER1.OFF'), ON: traced(trace, 'INNER1.ON') } },
                  INNER2: { initial: 'OFF', states: { OFF: traced(trace, 'INNER2.OFF'), ON: traced(trace, 'INNER2.ON') } },
                },
              },
            },
          },
        },
      }),
    steps: [
      {
        send: { type: 'EVENT_COMPLEX' },
        expect: {
          value: { OUTER1: { ON: { NTJ0: 'IDLE', NTJ1: 'IDLE' } }, OUTER2: { ON_COMPLEX: { INNER1: 'OFF', INNER2: 'OFF' } } },
          trace: ['exit:OUTER2.OFF', 'exit:OUTER1.OFF', 'entry:OUTER1.ON', 'entry:NTJ0.IDLE', 'entry:NTJ1.IDLE', 'entry:ON_COMPLEX'],
        },
      },
      {
        send: { type: 'WORK_0' },
        expect: { value: { OUTER1: { ON: { NTJ0: 'WORKING', NTJ1: 'IDLE' } }, OUTER2: { ON_COMPLEX: { INNER1: 'OFF', INNER2: 'OFF' } } } },
      },
    ],
  },
  {
    id: 'chart-parallel-orthogonal-targets',
    from: { file: PARALLEL, test: 'parallel states › other › regions should be able to transition to orthogonal regions' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'site',
        type: 'parallel',
        states: {
          Pages: {
            initial: 'About',
            states: { About: { id: 'About', ...traced(trace, 'About') }, Dashboard: { id: 'Dashboard', ...traced(trace, 'Dashboard') } },
          },
          Menu: {
            initial: 'Closed',
            states: {
              Closed: { id: 'Closed', ...traced(trace, 'Closed'), on: { toggle: '#Opened' } },
              Opened: { id: 'Opened', ...traced(trace, 'Opened'), on: { toggle: '#Closed', 'go to dashboard': { target: ['#Dashboard', '#Opened'] } } },
            },
          },
        },
      }),
    steps: [
      { send: { type: 'toggle' }, expect: { value: { Pages: 'About', Menu: 'Opened' } } },
      { send: { type: 'go to dashboard' }, expect: { value: { Pages: 'Dashboard', Menu: 'Opened' }, trace: ['entry:Dashboard'] } },
    ],
  },
  {
    id: 'chart-parallel-reenter-in-region',
    from: { file: PARALLEL, test: 'parallel states › other › should calculate the entry set for reentering transitions in parallel states' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'test',
        type: 'parallel',
        context: { log: [] as string[] },
        states: {
          foo: {
            initial: 'foobar',
            states: {
              foobar: { ...traced(trace, 'foobar'), on: { GOTO_FOOBAZ: 'foobaz' } },
              foobaz: {
                exit: () => trace('exit:foobaz'),
                entry: [assign({ log: ({ context }) => [...(context.log as string[]), 'entered foobaz'] }), () => trace('entry:foobaz')],
                on: { GOTO_FOOBAZ: { target: 'foobaz', reenter: true } },
              },
            },
          },
          bar: traced(trace, 'bar'),
        },
      }),
    steps: [
      { send: { type: 'GOTO_FOOBAZ' }, expect: { value: { foo: 'foobaz', bar: {} }, trace: ['exit:foobar', 'entry:foobaz'] } },
      { send: { type: 'GOTO_FOOBAZ' }, expect: { value: { foo: 'foobaz', bar: {} }, trace: ['exit:foobaz', 'entry:foobaz'] } },
    ],
  },
  {
    id: 'chart-parallel-cross-region-target',
    from: {
      file: PARALLEL,
      test: 'parallel states › source parallel region should be reentered when a transition within it targets another parallel region (nested parallel)',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'crossRegion',
        initial: 'a',
        states: {
          a: {
            ...traced(trace, 'a'),
            type: 'parallel',
            states: {
              Operation: {
                ...traced(trace, 'Operation'),
                initial: 'Waiting',
                states: { Waiting: { ...traced(trace, 'Waiting'), on: { TOGGLE_MODE: { target: '#Demo' } } }, Fetching: traced(trace, 'Fetching') },
              },
              Mode: {
                ...traced(trace, 'Mode'),
                initial: 'Normal',
                states: { Normal: traced(trace, 'Normal'), Demo: { id: 'Demo', ...traced(trace, 'Demo') } },
              },
            },
          },
        },
      }),
    steps: [
      {
        send: { type: 'TOGGLE_MODE' },
        expect: {
          value: { a: { Operation: 'Waiting', Mode: 'Demo' } },
          trace: ['exit:Normal', 'exit:Mode', 'exit:Waiting', 'exit:Operation', 'entry:Operation', 'entry:Waiting', 'entry:Mode', 'entry:Demo'],
        },
      },
    ],
  },
  {
    id: 'chart-parallel-targetless-in-region',
    from: { file: PARALLEL, test: 'parallel states › targetless transition in one of the parallel regions should not enter nor exit any states' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'targetless',
        type: 'parallel',
        context: { hits: 0 },
        states: {
          first: {
            ...traced(trace, 'first'),
            initial: 'disabled',
            on: { MY_EVENT: { actions: [assign({ hits: ({ context }) => (context.hits as number) + 1 }), () => trace('first:MY_EVENT')] } },
            states: { disabled: { ...traced(trace, 'disabled'), on: { ENABLE: 'enabled' } }, enabled: traced(trace, 'enabled') },
          },
          second: traced(trace, 'second'),
        },
      }),
    steps: [
      { send: { type: 'MY_EVENT' }, expect: { value: { first: 'disabled', second: {} }, trace: ['first:MY_EVENT'] } },
      { send: { type: 'ENABLE' } },
      { send: { type: 'MY_EVENT' }, expect: { value: { first: 'enabled', second: {} }, trace: ['first:MY_EVENT'] } },
    ],
  },
  {
    id: 'chart-parallel-all-regions-done',
    from: { file: PARALLEL, test: 'parallel states › should raise a "xstate.done.state.*" event when all child states reach final state' },
    machine: (trace) => {
      const region = (name: string) => ({
        initial: 'idle',
        states: {
          idle: { ...traced(trace, `${name}.idle`), on: { FINISH: 'finished' } },
          finished: { type: 'final' as const, entry: () => trace(`entry:${name}.finished`) },
        },
      });
      return setup({}).createMachine({
        id: 'test',
        initial: 'p',
        states: {
          p: { type: 'parallel', states: { a: region('a'), b: region('b'), c: region('c') }, onDone: { target: 'success', actions: () => trace('p:done') } },
          success: { type: 'final', entry: () => trace('entry:success') },
        },
      });
    },
    steps: [
      {
        send: { type: 'FINISH' },
        expect: { status: 'done', trace: ['entry:a.finished', 'entry:b.finished', 'entry:c.finished', 'p:done', 'entry:success'] },
      },
    ],
  },
  {
    id: 'chart-parallel-done-with-history-child',
    from: { file: PARALLEL, test: 'parallel states › should raise a "xstate.done.state.*" event when a pseudostate of a history type is directly on a parallel state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'parallelSteps',
        initial: 'parallelSteps',
        states: {
          parallelSteps: {
            type: 'parallel',
            onDone: { target: 'finished', actions: ({ event }) => trace(`onDone:${event.type}`) },
            states: {
              hist: { type: 'history' },
              one: { initial: 'wait_one', states: { wait_one: { on: { finish_one: 'done' } }, done: { type: 'final', entry: () => trace('entry:one.done') } } },
              two: { initial: 'wait_two', states: { wait_two: { on: { finish_two: 'done' } }, done: { type: 'final', entry: () => trace('entry:two.done') } } },
            },
          },
          finished: traced(trace, 'finished'),
        },
      }),
    steps: [
      { send: { type: 'finish_one' }, expect: { value: { parallelSteps: { one: 'done', two: 'wait_two' } } } },
      { send: { type: 'finish_two' }, expect: { value: 'finished', trace: ['entry:two.done', 'onDone:xstate.done.state.parallelSteps.parallelSteps', 'entry:finished'] } },
    ],
  },
  {
    id: 'chart-parallel-deep-flat',
    from: { file: PARALLEL, test: 'parallel states › deep flat parallel states › should properly evaluate deep flat parallel states' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'deepFlat',
        type: 'parallel',
        states: {
          X: traced(trace, 'X'),
          V: {
            initial: 'A',
            on: { a: { target: 'V.A' }, b: { target: 'V.B' }, c: { target: 'V.C' } },
            states: {
              A: traced(trace, 'A'),
              B: {
                ...traced(trace, 'B'),
                initial: 'BB',
                states: { BB: { ...traced(trace, 'BB'), type: 'parallel', states: { BBB_A: traced(trace, 'BBB_A'), BBB_B: traced(trace, 'BBB_B') } } },
              },
              C: traced(trace, 'C'),
            },
          },
        },
      }),
    steps: [
      { send: { type: 'a' }, expect: { value: { X: {}, V: 'A' } } },
      { send: { type: 'c' }, expect: { value: { X: {}, V: 'C' } } },
      { send: { type: 'b' }, expect: { value: { X: {}, V: { B: { BB: { BBB_A: {}, BBB_B: {} } } } }, trace: ['exit:C', 'entry:B', 'entry:BB', 'entry:BBB_A', 'entry:BBB_B'] } },
    ],
  },

  // ---------------------------------------------------------------- final states
  {
    id: 'chart-final-parallel-ondone',
    from: { file: FINAL, test: 'final states › should emit the "xstate.done.state.*" event when all nested states are in their final states' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'm',
        initial: 'foo',
        states: {
          foo: {
            ...traced(trace, 'foo'),
            type: 'parallel',
            onDone: { target: 'bar', actions: ({ event }) => trace(`onDone:${event.type}`) },
            states: {
              first: { initial: 'a', states: { a: { ...traced(trace, 'first.a'), on: { NEXT_1: 'b' } }, b: { type: 'final', ...traced(trace, 'first.b') } } },
              second: { initial: 'a', states: { a: { ...traced(trace, 'second.a'), on: { NEXT_2: 'b' } }, b: { type: 'final', ...traced(trace, 'second.b') } } },
            },
          },
          bar: traced(trace, 'bar'),
        },
      }),
    steps: [
      { send: { type: 'NEXT_1' }, expect: { value: { foo: { first: 'b', second: 'a' } }, status: 'active' } },
      {
        send: { type: 'NEXT_2' },
        expect: { value: 'bar', status: 'active', trace: ['entry:second.b', 'exit:second.b', 'exit:first.b', 'exit:foo', 'onDone:xstate.done.state.m.foo', 'entry:bar'] },
      },
    ],
  },
  {
    id: 'chart-final-child-actions-first',
    from: { file: FINAL, test: 'final states › should execute final child state actions first' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'finalOrder',
        initial: 'idle',
        states: {
          idle: { on: { GO: 'foo' } },
          foo: {
            initial: 'bar',
            onDone: { actions: () => trace('foo:done') },
            states: {
              bar: { initial: 'baz', onDone: 'barFinal', states: { baz: { type: 'final', entry: () => trace('entry:baz') } } },
              barFinal: { type: 'final', entry: () => trace('entry:barFinal') },
            },
          },
        },
      }),
    steps: [{ send: { type: 'GO' }, expect: { value: { foo: 'barFinal' }, status: 'active', trace: ['entry:baz', 'entry:barFinal', 'foo:done'] } }],
  },
  {
    id: 'chart-final-nested-output',
    from: { file: FINAL, test: 'final states › should call output expressions on nested final nodes' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'secretKeeper',
        initial: 'secret',
        context: { revealedSecret: null as string | null },
        states: {
          secret: {
            initial: 'wait',
            states: {
              wait: { on: { REQUEST_SECRET: 'reveal' } },
              reveal: { type: 'final', output: () => ({ secret: 'the secret' }) },
            },
            onDone: {
              target: 'success',
              actions: [
                assign({ revealedSecret: ({ event }) => (event.output as { secret: string }).secret }),
                ({ event }) => trace(`onDone:${(event.output as { secret: string }).secret}`),
              ],
            },
          },
          success: { type: 'final' },
        },
        output: ({ context }) => ({ revealed: context.revealedSecret as string }),
      }),
    steps: [{ send: { type: 'REQUEST_SECRET' }, expect: { value: 'success', status: 'done', trace: ['onDone:the secret'] } }],
  },
  {
    id: 'chart-final-output-sees-entry-assign',
    from: { file: FINAL, test: 'final states › state output should be able to use context updated by the entry action of the reached final state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'finalEntryAssign',
        context: { count: 0, seen: -1 },
        initial: 'a',
        states: {
          a: {
            initial: 'a1',
            states: {
              a1: { on: { NEXT: 'a2' } },
              a2: { type: 'final', entry: assign({ count: 1 }), output: ({ context }) => context.count as number },
            },
            onDone: { actions: [assign({ seen: ({ event }) => event.output as number }), ({ event }) => trace(`onDone:output=${String(event.output)}`)] },
          },
        },
      }),
    steps: [{ send: { type: 'NEXT' }, expect: { value: { a: 'a2' }, status: 'active', trace: ['onDone:output=1'] } }],
  },
  {
    id: 'chart-final-machine-output',
    from: { file: FINAL, test: "final states › should only call data expression once when entering root's final state" },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'checkout',
        initial: 'start',
        context: { items: 0 },
        states: {
          start: {
            ...traced(trace, 'start'),
            on: { ADD: { actions: assign({ items: ({ context }) => (context.items as number) + 1 }) }, FINISH: 'end' },
          },
          end: { type: 'final', entry: () => trace('entry:end'), output: ({ event }) => ({ code: (event as unknown as { code: string }).code }) },
        },
        exit: () => trace('exit:root'),
        output: ({ context, event }) => {
          trace(`output:${event.type}`);
          return { items: context.items as number, final: event.output as unknown };
        },
      }),
    steps: [
      { send: { type: 'ADD' } },
      { send: { type: 'ADD' } },
      { send: ev('FINISH', { code: 'OK-7' }), expect: { status: 'done', trace: ['exit:start', 'entry:end', 'exit:root'] } },
    ],
  },
  {
    id: 'chart-final-nested-parallel-done',
    from: {
      file: FINAL,
      test: 'final states › should emit a done state event for a parallel state when its compound child reaches its final state when the other parallel child region is already in its final state',
    },
    machine: (trace) => {
      const leg = (name: string, event: string) => ({
        initial: 'start',
        states: { start: { on: { [event]: 'finish' } }, finish: { type: 'final' as const, entry: () => trace(`entry:${name}.finish`) } },
      });
      return setup({}).createMachine({
        id: 'nestedDone',
        initial: 'first',
        states: {
          first: {
            type: 'parallel',
            onDone: { target: 'done', actions: () => trace('first:done') },
            states: {
              alpha: { type: 'parallel', onDone: { actions: () => trace('alpha:done') }, states: { one: leg('one', 'finish_one_alpha'), two: leg('two', 'finish_two_alpha') } },
              beta: { initial: 'three', onDone: { actions: () => trace('beta:done') }, states: { three: { on: { finish_beta: 'finish' } }, finish: { type: 'final' } } },
            },
          },
          done: { type: 'final' },
        },
        output: () => ({ finished: true }),
      });
    },
    steps: [
      { send: { type: 'finish_one_alpha' }, expect: { status: 'active' } },
      { send: { type: 'finish_two_alpha' }, expect: { status: 'active', trace: ['entry:two.finish', 'alpha:done'] } },
      { send: { type: 'finish_beta' }, expect: { status: 'done', value: 'done', trace: ['beta:done', 'first:done'] } },
    ],
  },
  {
    id: 'chart-final-exit-order',
    from: {
      file: FINAL,
      test: 'final states › should call exit actions of parallel states in reversed document order when the machines reaches its final state after earlier region transition',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'exitOrder',
        type: 'parallel',
        exit: () => trace('exit:root'),
        states: {
          a: {
            ...traced(trace, 'a'),
            initial: 'child_a1',
            states: { child_a1: { ...traced(trace, 'child_a1'), on: { EV2: 'child_a2' } }, child_a2: { type: 'final', ...traced(trace, 'child_a2') } },
          },
          b: {
            ...traced(trace, 'b'),
            initial: 'child_b1',
            states: { child_b1: { ...traced(trace, 'child_b1'), on: { EV1: 'child_b2' } }, child_b2: { type: 'final', ...traced(trace, 'child_b2') } },
          },
        },
      }),
    steps: [
      { send: { type: 'EV1' }, expect: { status: 'active', trace: ['exit:child_b1', 'entry:child_b2'] } },
      {
        send: { type: 'EV2' },
        expect: { status: 'done', trace: ['exit:child_a1', 'entry:child_a2', 'exit:child_b2', 'exit:b', 'exit:child_a2', 'exit:a', 'exit:root'] },
      },
    ],
  },
  {
    id: 'chart-final-parallel-partial',
    from: {
      file: FINAL,
      test: 'final states › should not complete a parallel root immediately when only some of its regions are in their final states (final state reached in a compound region)',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'partial',
        type: 'parallel',
        states: {
          A: { initial: 'A1', states: { A1: { type: 'final', entry: () => trace('entry:A1') } } },
          B: { initial: 'B1', states: { B1: { ...traced(trace, 'B1'), on: { FINISH: 'B2' } }, B2: { type: 'final', entry: () => trace('entry:B2') } } },
        },
        output: ({ event }) => ({ doneEvent: event.type }),
      }),
    expectStart: { status: 'active', value: { A: 'A1', B: 'B1' } },
    steps: [{ send: { type: 'FINISH' }, expect: { status: 'done', trace: ['exit:B1', 'entry:B2'] } }],
  },
  {
    id: 'chart-final-parallel-ondone-once',
    from: { file: FINAL, test: 'final states › onDone of a parallel state should only be called once when multiple parallel regions complete at once' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'onceDone',
        initial: 'idle',
        context: { doneCount: 0 },
        states: {
          idle: { on: { GO: 'a' } },
          a: {
            type: 'parallel',
            states: { b: { type: 'final', entry: () => trace('entry:b') }, c: { type: 'final', entry: () => trace('entry:c') } },
            onDone: { actions: [assign({ doneCount: ({ context }) => (context.doneCount as number) + 1 }), () => trace('a:done')] },
            on: { BACK: 'idle' },
          },
        },
      }),
    steps: [
      { send: { type: 'GO' }, expect: { value: { a: { b: {}, c: {} } }, trace: ['entry:b', 'entry:c', 'a:done'] } },
      { send: { type: 'BACK' }, expect: { value: 'idle' } },
      { send: { type: 'GO' }, expect: { trace: ['a:done'] } },
    ],
  },
  {
    id: 'chart-final-outer-parallel-ondone',
    from: {
      file: FINAL,
      test: 'final states › onDone of an outer parallel state should be called with its own "xstate.done.state.*" event when its direct parallel child completes',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'outerDone',
        initial: 'idle',
        states: {
          idle: { on: { GO: 'a' } },
          a: {
            type: 'parallel',
            states: { b: { type: 'parallel', states: { c: { initial: 'd', states: { d: { type: 'final', entry: () => trace('entry:d') } } } } } },
            onDone: { actions: ({ event }) => trace(`onDone:${event.type}`) },
          },
        },
      }),
    steps: [{ send: { type: 'GO' }, expect: { value: { a: { b: { c: 'd' } } }, status: 'active', trace: ['entry:d', 'onDone:xstate.done.state.outerDone.a'] } }],
  },
  {
    id: 'chart-final-child-machine-sends-before-done',
    from: { file: FINAL, test: 'final states › should deliver final outgoing events (from final entry action) to the parent before delivering the `xstate.done.actor.*` event' },
    refused: 'stateful_child',
    machine: (trace) => {
      const child = createMachine({
        id: 'child',
        initial: 'start',
        states: {
          start: { on: { CANCEL: 'canceled' } },
          canceled: { type: 'final', entry: [() => trace('child:canceled'), sendParent({ type: 'CHILD_CANCELED' })] },
        },
      });
      return setup({ actors: { child } }).createMachine({
        id: 'parent',
        initial: 'start',
        states: {
          start: {
            invoke: { id: 'child', src: 'child', onDone: 'completed' },
            on: { CANCEL: { actions: sendTo('child', { type: 'CANCEL' }) }, CHILD_CANCELED: 'canceled' },
          },
          canceled: traced(trace, 'canceled'),
          completed: traced(trace, 'completed'),
        },
      });
    },
    steps: [{ send: { type: 'CANCEL' }, expect: { value: 'canceled', trace: ['child:canceled', 'entry:canceled'] } }],
  },

  // ---------------------------------------------------------------- eventless transitions
  {
    id: 'chart-always-first-matching-guard',
    from: { file: TRANSIENT, test: 'transient states (eventless transitions) › should choose the first candidate target that matches the guard 1' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'firstMatch',
        context: { data: false },
        initial: 'G',
        states: {
          G: { ...traced(trace, 'G'), on: { UPDATE_BUTTON_CLICKED: 'E', FLIP: { actions: assign({ data: ({ context }) => !context.data }) } } },
          E: { ...traced(trace, 'E'), always: [{ target: 'D', guard: ({ context }) => !context.data }, { target: 'F' }] },
          D: { ...traced(trace, 'D'), on: { BACK: 'G' } },
          F: { ...traced(trace, 'F'), on: { BACK: 'G' } },
        },
      }),
    steps: [
      { send: { type: 'UPDATE_BUTTON_CLICKED' }, expect: { value: 'D', trace: ['exit:G', 'entry:E', 'exit:E', 'entry:D'] } },
      { send: { type: 'BACK' }, expect: { value: 'G' } },
      { send: { type: 'FLIP' } },
      { send: { type: 'UPDATE_BUTTON_CLICKED' }, expect: { value: 'F', trace: ['entry:E', 'exit:E', 'entry:F'] } },
    ],
  },
  {
    id: 'chart-always-carries-actions',
    from: { file: TRANSIENT, test: 'transient states (eventless transitions) › should carry actions from previous transitions within same step' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'carry',
        initial: 'A',
        states: {
          A: { exit: () => trace('exit:A'), on: { TIMER: { target: 'T', actions: () => trace('timer') } } },
          T: { ...traced(trace, 'T'), always: { target: 'B', actions: () => trace('always:T') } },
          B: { entry: () => trace('entry:B') },
        },
      }),
    steps: [{ send: { type: 'TIMER' }, expect: { value: 'B', trace: ['exit:A', 'timer', 'entry:T', 'exit:T', 'always:T', 'entry:B'] } }],
  },
  {
    id: 'chart-always-greeting-recheck',
    from: { file: TRANSIENT, test: 'transient states (eventless transitions) › should determine the resolved state from an initial transient state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'greeting',
        initial: 'pending',
        context: { hour: 10 },
        on: { CHANGE: { actions: assign({ hour: 20 }) }, RECHECK: '#greeting' },
        states: {
          pending: {
            ...traced(trace, 'pending'),
            always: [
              { target: 'morning', guard: ({ context }) => (context.hour as number) < 12 },
              { target: 'afternoon', guard: ({ context }) => (context.hour as number) < 18 },
              { target: 'evening' },
            ],
          },
          morning: traced(trace, 'morning'),
          afternoon: traced(trace, 'afternoon'),
          evening: traced(trace, 'evening'),
        },
      }),
    expectStart: { value: 'morning', trace: ['entry:pending', 'exit:pending', 'entry:morning'] },
    steps: [
      { send: { type: 'CHANGE' }, expect: { value: 'morning' } },
      { send: { type: 'RECHECK' }, expect: { value: 'evening', trace: ['exit:morning', 'entry:pending', 'exit:pending', 'entry:evening'] } },
    ],
  },
  {
    id: 'chart-always-same-microstep-state-in',
    from: { file: TRANSIENT, test: 'transient states (eventless transitions) › should execute all eventless transitions in the same microstep' },
    machine: (trace) =>
      createMachine({
        id: 'lockstep',
        type: 'parallel',
        states: {
          A: {
            initial: 'A1',
            states: {
              A1: { on: { E: 'A2' } },
              A2: { ...traced(trace, 'A2'), always: 'A3' },
              A3: { ...traced(trace, 'A3'), always: { target: 'A4', guard: stateIn({ B: 'B3' }) } },
              A4: traced(trace, 'A4'),
            },
          },
          B: {
            initial: 'B1',
            states: {
              B1: { on: { E: 'B2' } },
              B2: { ...traced(trace, 'B2'), always: { target: 'B3', guard: stateIn({ A: 'A2' }) } },
              B3: { ...traced(trace, 'B3'), always: { target: 'B4', guard: stateIn({ A: 'A3' }) } },
              B4: traced(trace, 'B4'),
            },
          },
        },
      }),
    steps: [{ send: { type: 'E' }, expect: { value: { A: 'A4', B: 'B4' }, trace: ['entry:A2', 'entry:B2', 'entry:A3', 'entry:B3', 'entry:A4', 'entry:B4'] } }],
  },
  {
    id: 'chart-always-before-raised',
    from: { file: TRANSIENT, test: 'transient states (eventless transitions) › should select eventless transition before processing raised events' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'raiseOrder',
        initial: 'a',
        states: {
          a: { on: { FOO: 'b' } },
          b: { ...traced(trace, 'b'), entry: [() => trace('entry:b'), raise({ type: 'BAR' })], always: 'c', on: { BAR: 'd' } },
          c: { ...traced(trace, 'c'), on: { BAR: 'e' } },
          d: traced(trace, 'd'),
          e: traced(trace, 'e'),
        },
      }),
    steps: [{ send: { type: 'FOO' }, expect: { value: 'e', trace: ['entry:b', 'exit:b', 'entry:c', 'exit:c', 'entry:e'] } }],
  },
  {
    id: 'chart-always-guard-on-unhandled-event',
    from: { file: TRANSIENT, test: 'transient states (eventless transitions) › should select subsequent transient transitions even in absence of other transitions' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'watcher',
        initial: 'a',
        states: {
          a: { ...traced(trace, 'a'), always: { target: 'b', guard: ({ event }) => event.type === 'WHATEVER' } },
          b: { ...traced(trace, 'b'), always: { target: 'c', guard: () => true } },
          c: traced(trace, 'c'),
        },
      }),
    // No transition names these types: the runtime takes them once the definition declares them.
    events: { SOMETHING_ELSE: z.looseObject({}), WHATEVER: z.looseObject({}) },
    expectStart: { value: 'a' },
    steps: [
      { send: { type: 'SOMETHING_ELSE' }, expect: { value: 'a' } },
      { send: { type: 'WHATEVER' }, expect: { value: 'c', trace: ['exit:a', 'entry:b', 'exit:b', 'entry:c'] } },
    ],
  },
  {
    id: 'chart-always-keeps-triggering-event',
    from: { file: TRANSIENT, test: 'transient states (eventless transitions) › events that trigger eventless transitions should be preserved in actions' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'keepEvent',
        initial: 'a',
        states: {
          a: { on: { EVENT: 'b' } },
          b: {
            always: { target: 'c', actions: ({ event }) => trace(`always:${JSON.stringify(event)}`) },
            exit: ({ event }) => trace(`exit:b:${JSON.stringify(event)}`),
          },
          c: {
            entry: ({ event }) => trace(`entry:c:${JSON.stringify(event)}`),
            always: { target: 'd', guard: ({ event }) => event.type === 'EVENT' },
          },
          d: { type: 'final' },
        },
      }),
    steps: [
      {
        send: ev('EVENT', { value: 42 }),
        expect: {
          status: 'done',
          trace: ['exit:b:{"type":"EVENT","value":42}', 'always:{"type":"EVENT","value":42}', 'entry:c:{"type":"EVENT","value":42}'],
        },
      },
    ],
  },
  {
    id: 'chart-always-assign-loop',
    from: { file: TRANSIENT, test: 'transient states (eventless transitions) › should loop (but not infinitely) for assign actions' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'counting',
        context: { count: 0 },
        initial: 'counting',
        states: {
          counting: {
            always: {
              guard: ({ context }) => (context.count as number) < 5,
              actions: [assign({ count: ({ context }) => (context.count as number) + 1 }), ({ context }) => trace(`count:${String(context.count)}`)],
            },
            on: { RESET: { actions: assign({ count: ({ event }) => (event as unknown as { to: number }).to }) } },
          },
        },
      }),
    expectStart: { trace: ['count:1', 'count:2', 'count:3', 'count:4', 'count:5'] },
    steps: [{ send: ev('RESET', { to: 2 }), expect: { trace: ['count:3', 'count:4', 'count:5'] } }],
  },
  {
    id: 'chart-always-after-raised-targetless',
    from: {
      file: TRANSIENT,
      test: "transient states (eventless transitions) › should execute an always transition after a raised transition even if that raised transition doesn't change the state",
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'alwaysRaised',
        context: { counter: 0 },
        always: { actions: ({ context }) => trace(`always:${String(context.counter)}`) },
        on: {
          EV: { actions: raise({ type: 'RAISED' }) },
          RAISED: { actions: assign({ counter: ({ context }) => (context.counter as number) + 1 }) },
        },
      }),
    expectStart: { trace: ['always:0'] },
    steps: [
      { send: { type: 'EV' }, expect: { trace: ['always:0', 'always:1'] } },
      { send: { type: 'EV' }, expect: { trace: ['always:1', 'always:2'] } },
    ],
  },
  {
    id: 'chart-always-root-reacts-to-assign',
    from: { file: TRANSIENT, test: 'transient states (eventless transitions) › should work with transient transition on root' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'machine',
        initial: 'first',
        context: { count: 0 },
        always: [{ target: '.success', guard: ({ context }) => (context.count as number) > 1 }],
        states: {
          first: { ...traced(trace, 'first'), on: { ADD: { actions: assign({ count: ({ context }) => (context.count as number) + 1 }) } } },
          success: { type: 'final', entry: () => trace('entry:success') },
        },
        output: ({ context }) => ({ count: context.count as number }),
      }),
    steps: [
      { send: { type: 'ADD' }, expect: { status: 'active', value: 'first' } },
      { send: { type: 'ADD' }, expect: { status: 'done', value: 'success', trace: ['exit:first', 'entry:success'] } },
    ],
  },
  {
    id: 'chart-always-fallback-child',
    from: { file: TRANSIENT, test: "transient states (eventless transitions) › shouldn't end up in an infinite loop when selecting the fallback target" },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'fallback',
        initial: 'idle',
        states: {
          idle: { on: { event: 'active' } },
          active: {
            ...traced(trace, 'active'),
            initial: 'a',
            states: { a: traced(trace, 'a'), b: traced(trace, 'b') },
            always: [{ guard: () => false, target: '.a' }, { target: '.b', actions: () => trace('always:fallback') }],
          },
        },
      }),
    steps: [{ send: { type: 'event' }, expect: { value: { active: 'b' }, trace: ['entry:active', 'entry:a', 'exit:a', 'always:fallback', 'entry:b'] } }],
  },

  // ---------------------------------------------------------------- guards
  {
    id: 'chart-guard-named-with-input',
    from: { file: GUARDS, test: 'guard conditions › should work with defined string transitions' },
    input: { elapsed: 120 },
    machine: (trace) =>
      setup({
        types: { context: {} as { elapsed: number }, input: {} as { elapsed?: number } },
        guards: { minTimeElapsed: ({ context }) => context.elapsed >= 100 && context.elapsed < 200 },
      }).createMachine({
        id: 'light',
        context: ({ input }) => ({ elapsed: input.elapsed ?? 0 }),
        initial: 'green',
        states: {
          green: {
            ...traced(trace, 'green'),
            on: {
              TIMER: [
                { target: 'green', guard: ({ context }) => context.elapsed < 100 },
                { target: 'yellow', guard: ({ context }) => context.elapsed >= 100 && context.elapsed < 200 },
              ],
            },
          },
          yellow: { ...traced(trace, 'yellow'), on: { TIMER: { target: 'red', guard: 'minTimeElapsed' } } },
          red: traced(trace, 'red'),
        },
      }),
    steps: [
      { send: { type: 'TIMER' }, expect: { value: 'yellow', trace: ['exit:green', 'entry:yellow'] } },
      { send: { type: 'TIMER' }, expect: { value: 'red', trace: ['exit:yellow', 'entry:red'] } },
    ],
  },
  {
    id: 'chart-guard-event-payload',
    from: { file: GUARDS, test: 'guard conditions › should transition if condition based on event is met' },
    machine: (trace) =>
      setup({
        types: { events: {} as { type: 'EMERGENCY'; isEmergency?: boolean } | { type: 'TIMER' } },
      }).createMachine({
        id: 'emergencyLight',
        initial: 'green',
        states: {
          green: {
            ...traced(trace, 'green'),
            on: {
              EMERGENCY: { target: 'red', guard: ({ event }) => !!event.isEmergency },
              TIMER: { target: 'green', actions: () => trace('green:timer') },
            },
          },
          red: traced(trace, 'red'),
        },
      }),
    steps: [
      { send: { type: 'EMERGENCY' }, expect: { value: 'green' } },
      { send: ev('EMERGENCY', { isEmergency: false }), expect: { value: 'green' } },
      { send: { type: 'TIMER' }, expect: { value: 'green', trace: ['green:timer'] } },
      { send: ev('EMERGENCY', { isEmergency: true }), expect: { value: 'red', trace: ['exit:green', 'entry:red'] } },
    ],
  },
  {
    id: 'chart-guard-none-matches',
    from: { file: GUARDS, test: 'guard conditions › should not transition if no condition is met' },
    machine: (trace) =>
      setup({
        types: { events: {} as { type: 'TIMER'; elapsed: number } },
      }).createMachine({
        id: 'noMatch',
        initial: 'a',
        states: {
          a: {
            ...traced(trace, 'a'),
            on: {
              TIMER: [
                { target: 'b', guard: ({ event }) => event.elapsed > 200 },
                { target: 'c', guard: ({ event }) => event.elapsed > 100 },
              ],
            },
          },
          b: traced(trace, 'b'),
          c: traced(trace, 'c'),
        },
      }),
    steps: [
      { send: ev('TIMER', { elapsed: 10 }), expect: { value: 'a' } },
      { send: ev('TIMER', { elapsed: 150 }), expect: { value: 'c', trace: ['exit:a', 'entry:c'] } },
    ],
  },
  {
    id: 'chart-guard-fallback-string',
    from: { file: GUARDS, test: 'guards - other › should allow for a fallback target to be a simple string' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'fallbackString',
        context: { open: false },
        initial: 'a',
        states: {
          a: {
            ...traced(trace, 'a'),
            on: { EVENT: [{ target: 'b', guard: ({ context }) => context.open as boolean }, 'c'], OPEN: { actions: assign({ open: true }) } },
          },
          b: { ...traced(trace, 'b'), on: { BACK: 'a' } },
          c: { ...traced(trace, 'c'), on: { BACK: 'a' } },
        },
      }),
    steps: [
      { send: { type: 'EVENT' }, expect: { value: 'c' } },
      { send: { type: 'BACK' } },
      { send: { type: 'OPEN' } },
      { send: { type: 'EVENT' }, expect: { value: 'b', trace: ['exit:a', 'entry:b'] } },
    ],
  },
  {
    id: 'chart-guard-state-in-region',
    from: { file: GUARDS, test: 'guard conditions › should allow a matching transition' },
    machine: (trace) =>
      createMachine({
        id: 'stateInGuard',
        type: 'parallel',
        states: {
          A: { initial: 'A2', states: { A0: traced(trace, 'A0'), A2: { ...traced(trace, 'A2'), on: { TO_A0: 'A0' } } } },
          B: {
            initial: 'B0',
            states: {
              B0: {
                ...traced(trace, 'B0'),
                always: [{ target: 'B4', guard: () => false }],
                on: { T2: [{ target: 'B2', guard: stateIn('#stateInGuard.A.A2') }, { target: 'B1' }] },
              },
              B1: { ...traced(trace, 'B1'), on: { RESET: 'B0' } },
              B2: { ...traced(trace, 'B2'), on: { RESET: 'B0' } },
              B4: traced(trace, 'B4'),
            },
          },
        },
      }),
    steps: [
      { send: { type: 'T2' }, expect: { value: { A: 'A2', B: 'B2' }, trace: ['exit:B0', 'entry:B2'] } },
      { send: { type: 'RESET' } },
      { send: { type: 'TO_A0' } },
      { send: { type: 'T2' }, expect: { value: { A: 'A0', B: 'B1' }, trace: ['exit:B0', 'entry:B1'] } },
    ],
  },
  {
    id: 'chart-guard-state-in-interim',
    from: { file: GUARDS, test: 'guard conditions › should check guards with interim states' },
    machine: (trace) =>
      createMachine({
        id: 'interim',
        type: 'parallel',
        states: {
          A: {
            initial: 'A2',
            states: {
              A2: { on: { A: 'A3' } },
              A3: { ...traced(trace, 'A3'), always: 'A4' },
              A4: { ...traced(trace, 'A4'), always: 'A5' },
              A5: traced(trace, 'A5'),
            },
          },
          B: { initial: 'B0', states: { B0: { ...traced(trace, 'B0'), always: [{ target: 'B4', guard: stateIn({ A: 'A4' }) }] }, B4: traced(trace, 'B4') } },
        },
      }),
    steps: [{ send: { type: 'A' }, expect: { value: { A: 'A5', B: 'B4' }, trace: ['entry:A3', 'entry:A4', 'exit:B0', 'exit:A4', 'entry:A5', 'entry:B4'] } }],
  },
  {
    id: 'chart-guard-custom-params',
    from: { file: GUARDS, test: 'custom guards › should evaluate custom guards' },
    machine: (trace) =>
      setup({
        types: { context: {} as { count: number }, events: {} as { type: 'EVENT'; value: number } | { type: 'INC' } },
        guards: {
          custom: ({ context, event }, params: { prop: 'count'; op: 'greaterThan'; compare: number }) =>
            params.op === 'greaterThan' && event.type === 'EVENT' && context[params.prop] + event.value > params.compare,
        },
      }).createMachine({
        id: 'customGuard',
        initial: 'inactive',
        context: { count: 0 },
        states: {
          inactive: {
            ...traced(trace, 'inactive'),
            on: {
              EVENT: { target: 'active', guard: { type: 'custom', params: { prop: 'count', op: 'greaterThan', compare: 3 } } },
              INC: { actions: assign({ count: ({ context }) => context.count + 1 }) },
            },
          },
          active: traced(trace, 'active'),
        },
      }),
    steps: [
      { send: ev('EVENT', { value: 3 }), expect: { value: 'inactive' } },
      { send: { type: 'INC' } },
      { send: ev('EVENT', { value: 3 }), expect: { value: 'active', trace: ['exit:inactive', 'entry:active'] } },
    ],
  },
  {
    id: 'chart-guard-dynamic-params',
    from: { file: GUARDS, test: 'custom guards › should resolve dynamic params using event value' },
    machine: (trace) =>
      setup({
        types: { context: {} as { threshold: number }, events: {} as { type: 'FOO'; secret: number } },
        guards: {
          above: (_, params: { secret: number; threshold: number }) => {
            trace(`guard:above ${JSON.stringify(params)}`);
            return params.secret > params.threshold;
          },
        },
      }).createMachine({
        id: 'dynamicParams',
        initial: 'locked',
        context: { threshold: 50 },
        states: {
          locked: {
            ...traced(trace, 'locked'),
            on: {
              FOO: {
                target: 'open',
                guard: { type: 'above', params: ({ context, event }) => ({ secret: event.secret, threshold: context.threshold }) },
              },
            },
          },
          open: traced(trace, 'open'),
        },
      }),
    steps: [
      { send: ev('FOO', { secret: 42 }), expect: { value: 'locked', trace: ['guard:above {"secret":42,"threshold":50}'] } },
      { send: ev('FOO', { secret: 77 }), expect: { value: 'open', trace: ['guard:above {"secret":77,"threshold":50}', 'exit:locked', 'entry:open'] } },
    ],
  },
  {
    id: 'chart-guard-not-object',
    from: { file: GUARDS, test: 'not() guard › should guard with object' },
    machine: (trace) =>
      setup({
        types: { context: {} as { value: number } },
        guards: { valueAbove: ({ context }, params: { limit: number }) => context.value > params.limit },
      }).createMachine({
        id: 'notGuard',
        initial: 'a',
        context: { value: 15 },
        states: {
          a: {
            ...traced(trace, 'a'),
            on: {
              EVENT: { target: 'b', guard: not({ type: 'valueAbove', params: { limit: 10 } }) },
              SET: { actions: assign({ value: ({ event }) => (event as unknown as { value: number }).value }) },
            },
          },
          b: traced(trace, 'b'),
        },
      }),
    steps: [
      { send: { type: 'EVENT' }, expect: { value: 'a' } },
      { send: ev('SET', { value: 5 }) },
      { send: { type: 'EVENT' }, expect: { value: 'b', trace: ['exit:a', 'entry:b'] } },
    ],
  },
  {
    id: 'chart-guard-and-nested',
    from: { file: GUARDS, test: 'and() guard › should guard with nested built-in guards' },
    machine: (trace) =>
      setup({
        types: { context: {} as { armed: boolean; locked: boolean } },
        guards: {
          isArmed: ({ context }) => context.armed,
          isLocked: ({ context }) => context.locked,
        },
      }).createMachine({
        id: 'andGuard',
        initial: 'a',
        context: { armed: false, locked: true },
        states: {
          a: {
            ...traced(trace, 'a'),
            on: {
              EVENT: { target: 'b', guard: and([() => true, not('isLocked'), and([not('isLocked'), 'isArmed'])]) },
              ARM: { actions: assign({ armed: true }) },
              UNLOCK: { actions: assign({ locked: false }) },
            },
          },
          b: traced(trace, 'b'),
        },
      }),
    steps: [
      { send: { type: 'ARM' } },
      { send: { type: 'EVENT' }, expect: { value: 'a' } },
      { send: { type: 'UNLOCK' } },
      { send: { type: 'EVENT' }, expect: { value: 'b', trace: ['exit:a', 'entry:b'] } },
    ],
  },
  {
    id: 'chart-guard-or-object',
    from: { file: GUARDS, test: 'or() guard › should guard with object' },
    machine: (trace) =>
      setup({
        types: { events: {} as { type: 'EVENT'; a: number; b: number } },
        guards: { fieldAbove10: ({ event }, params: { field: 'a' | 'b' }) => event[params.field] > 10 },
      }).createMachine({
        id: 'orGuard',
        initial: 'a',
        states: {
          a: {
            ...traced(trace, 'a'),
            on: {
              EVENT: {
                target: 'b',
                guard: or([
                  { type: 'fieldAbove10', params: { field: 'a' as const } },
                  { type: 'fieldAbove10', params: { field: 'b' as const } },
                ]),
              },
            },
          },
          b: traced(trace, 'b'),
        },
      }),
    steps: [
      { send: ev('EVENT', { a: 4, b: 9 }), expect: { value: 'a' } },
      { send: ev('EVENT', { a: 4, b: 50 }), expect: { value: 'b', trace: ['exit:a', 'entry:b'] } },
    ],
  },
  {
    id: 'chart-guard-referenced-composite',
    from: { file: GUARDS, test: 'referencing guards › should be possible to reference a composite guard that references other guards recursively' },
    machine: (trace) =>
      setup({
        types: { context: {} as { flag: boolean } },
        guards: {
          truthy: () => true,
          flagged: ({ context }) => context.flag,
          referenced: or([() => false, not('truthy'), and([not('flagged'), 'truthy'])]),
        },
      }).createMachine({
        id: 'refGuard',
        initial: 'a',
        context: { flag: true },
        states: {
          a: {
            ...traced(trace, 'a'),
            on: { EVENT: { target: 'b', guard: 'referenced' }, CLEAR: { actions: assign({ flag: false }) } },
          },
          b: traced(trace, 'b'),
        },
      }),
    steps: [
      { send: { type: 'EVENT' }, expect: { value: 'a' } },
      { send: { type: 'CLEAR' } },
      { send: { type: 'EVENT' }, expect: { value: 'b', trace: ['exit:a', 'entry:b'] } },
    ],
  },
  {
    id: 'chart-guard-not-referenced-params',
    from: { file: GUARDS, test: 'custom guards › should call an object guard referenced by referenced `not` with its own params' },
    machine: (trace) =>
      setup({
        guards: {
          other: (_, params: number) => {
            trace(`guard:other ${String(params)}`);
            return params > 100;
          },
          myGuard: not({ type: 'other', params: 42 }),
        },
      }).createMachine({
        id: 'notRefParams',
        initial: 'a',
        states: {
          a: { ...traced(trace, 'a'), on: { FOO: { target: 'b', guard: 'myGuard' } } },
          b: traced(trace, 'b'),
        },
      }),
    steps: [{ send: { type: 'FOO' }, expect: { value: 'b', trace: ['guard:other 42', 'exit:a', 'entry:b'] } }],
  },

  // ---------------------------------------------------------------- deep targets
  {
    id: 'chart-deep-exit-all-substates',
    from: { file: DEEP, test: 'deep transitions › exiting super/substates › should exit all substates when superstates exits' },
    machine: (trace) => deepChart(trace, { A: { A_EVENT: '#root.DONE' } }),
    expectStart: { value: { A: { B: { C: 'D' } } }, trace: ENTER_A_TO_D },
    steps: [{ send: { type: 'A_EVENT' }, expect: { value: 'DONE', trace: [...EXIT_D_TO_A, 'entry:DONE'] } }],
  },
  {
    id: 'chart-deep-machine-handles-event',
    from: { file: DEEP, test: 'deep transitions › exiting super/substates › should exit substate when machine handles event (MACHINE_EVENT)' },
    machine: (trace) => deepChart(trace, { root: { MACHINE_EVENT: '#root.DONE' } }),
    steps: [{ send: { type: 'MACHINE_EVENT' }, expect: { value: 'DONE', trace: [...EXIT_D_TO_A, 'entry:DONE'] } }],
  },
  {
    id: 'chart-deep-exit-and-enter-deep',
    from: { file: DEEP, test: 'deep transitions › exiting super/substates › should exit deep and enter deep (D_P)' },
    machine: (trace) => deepChart(trace, { D: { D_P: '#root.P' } }),
    steps: [{ send: { type: 'D_P' }, expect: { value: { P: { Q: { R: 'S' } } }, trace: [...EXIT_D_TO_A, ...ENTER_P_TO_S] } }],
  },
  {
    id: 'chart-deep-target-deep-state',
    from: { file: DEEP, test: 'deep transitions › exiting super/substates › should exit deep and enter deep when targeting a deep state' },
    machine: (trace) => deepChart(trace, { D: { D_S: '#root.P.Q.R.S' } }),
    steps: [{ send: { type: 'D_S' }, expect: { value: { P: { Q: { R: 'S' } } }, trace: [...EXIT_D_TO_A, ...ENTER_P_TO_S] } }],
  },

  // ---------------------------------------------------------------- internal and reentering transitions
  {
    id: 'chart-internal-child-target',
    from: { file: INTERNAL, test: 'internal transitions › parent state should enter child state without re-entering self' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'internalChild',
        initial: 'foo',
        states: {
          foo: { ...traced(trace, 'foo'), initial: 'a', on: { CLICK: '.b' }, states: { a: traced(trace, 'a'), b: traced(trace, 'b') } },
        },
      }),
    steps: [
      { send: { type: 'CLICK' }, expect: { value: { foo: 'b' }, trace: ['exit:a', 'entry:b'] } },
      { send: { type: 'CLICK' }, expect: { value: { foo: 'b' } } },
    ],
  },
  {
    id: 'chart-reenter-child-target',
    from: { file: INTERNAL, test: 'internal transitions › parent state should re-enter self upon transitioning to child state if transition is reentering' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'reenterChild',
        initial: 'foo',
        states: {
          foo: {
            ...traced(trace, 'foo'),
            initial: 'left',
            on: { NEXT: { target: '.right', reenter: true } },
            states: { left: traced(trace, 'left'), right: traced(trace, 'right') },
          },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: { foo: 'right' }, trace: ['exit:left', 'exit:foo', 'entry:foo', 'entry:right'] } },
      { send: { type: 'NEXT' }, expect: { value: { foo: 'right' }, trace: ['exit:right', 'exit:foo', 'entry:foo', 'entry:right'] } },
    ],
  },
  {
    id: 'chart-reenter-self-resets',
    from: { file: INTERNAL, test: 'internal transitions › parent state should only exit/reenter if there is an explicit self-transition' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'selfReset',
        initial: 'foo',
        states: {
          foo: {
            ...traced(trace, 'foo'),
            initial: 'a',
            on: { RESET: { target: 'foo', reenter: true }, SOFT: { target: 'foo' } },
            states: { a: { ...traced(trace, 'a'), on: { NEXT: 'b' } }, b: traced(trace, 'b') },
          },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: { foo: 'b' } } },
      { send: { type: 'RESET' }, expect: { value: { foo: 'a' }, trace: ['exit:b', 'exit:foo', 'entry:foo', 'entry:a'] } },
      { send: { type: 'NEXT' }, expect: { value: { foo: 'b' } } },
      { send: { type: 'SOFT' }, expect: { value: { foo: 'a' }, trace: ['exit:b', 'entry:a'] } },
    ],
  },
  {
    id: 'chart-internal-descendants-reentered',
    from: { file: INTERNAL, test: 'internal transitions › should reenter proper descendants of a source state of an internal transition' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'descendants',
        context: { source: 0, direct: 0, deep: 0 },
        initial: 'a1',
        states: {
          a1: {
            entry: [assign({ source: ({ context }) => (context.source as number) + 1 }), () => trace('entry:a1')],
            exit: () => trace('exit:a1'),
            initial: 'a11',
            on: { REENTER: '.a11.a111' },
            states: {
              a11: {
                entry: [assign({ direct: ({ context }) => (context.direct as number) + 1 }), () => trace('entry:a11')],
                exit: () => trace('exit:a11'),
                initial: 'a111',
                states: {
                  a111: {
                    entry: [assign({ deep: ({ context }) => (context.deep as number) + 1 }), () => trace('entry:a111')],
                    exit: () => trace('exit:a111'),
                  },
                },
              },
            },
          },
        },
      }),
    steps: [{ send: { type: 'REENTER' }, expect: { value: { a1: { a11: 'a111' } }, trace: ['exit:a111', 'exit:a11', 'entry:a11', 'entry:a111'] } }],
  },
  {
    id: 'chart-internal-targetless-on-parent',
    from: { file: INTERNAL, test: 'internal transitions › should maintain the child state when targetless transition is handled by parent' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'parentTargetless',
        initial: 'foo',
        context: { events: 0 },
        on: { PARENT_EVENT: { actions: [assign({ events: ({ context }) => (context.events as number) + 1 }), () => trace('root:PARENT_EVENT')] } },
        states: {
          foo: { ...traced(trace, 'foo'), on: { NEXT: 'bar' } },
          bar: traced(trace, 'bar'),
        },
      }),
    steps: [
      { send: { type: 'PARENT_EVENT' }, expect: { value: 'foo', trace: ['root:PARENT_EVENT'] } },
      { send: { type: 'NEXT' } },
      { send: { type: 'PARENT_EVENT' }, expect: { value: 'bar', trace: ['root:PARENT_EVENT'] } },
    ],
  },

  // ---------------------------------------------------------------- initial states
  {
    id: 'chart-initial-deep-parallel',
    from: { file: INITIAL, test: 'Initial states › should return the correct initial state (deep parallel)' },
    machine: (trace) => {
      const column = (prefix: string) => ({
        ...traced(trace, prefix),
        initial: 'a',
        states: {
          a: {
            ...traced(trace, `${prefix}.a`),
            initial: 'b',
            states: { b: { ...traced(trace, `${prefix}.b`), initial: 'c', states: { c: traced(trace, `${prefix}.c`) } } },
          },
          leaf: traced(trace, `${prefix}.leaf`),
        },
      });
      return setup({}).createMachine({
        id: 'deepParallelInit',
        initial: 'one',
        states: {
          one: { ...traced(trace, 'one'), type: 'parallel', on: { SWAP: 'two' }, states: { foo: column('one.foo'), bar: column('one.bar') } },
          two: { ...traced(trace, 'two'), type: 'parallel', states: { foo: column('two.foo'), bar: column('two.bar') } },
        },
      });
    },
    expectStart: {
      value: { one: { foo: { a: { b: 'c' } }, bar: { a: { b: 'c' } } } },
      trace: ['entry:one', 'entry:one.foo', 'entry:one.foo.a', 'entry:one.foo.b', 'entry:one.foo.c', 'entry:one.bar', 'entry:one.bar.c'],
    },
    steps: [
      {
        send: { type: 'SWAP' },
        expect: {
          value: { two: { foo: { a: { b: 'c' } }, bar: { a: { b: 'c' } } } },
          trace: ['exit:one.bar.c', 'exit:one.bar', 'exit:one.foo.c', 'exit:one', 'entry:two', 'entry:two.foo.c', 'entry:two.bar.c'],
        },
      },
    ],
  },
  {
    id: 'chart-initial-nested',
    from: { file: INITIAL, test: 'Initial states › should return the correct initial state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'nestedInit',
        initial: 'a',
        states: {
          a: {
            ...traced(trace, 'a'),
            initial: { target: 'b', actions: () => trace('initial:a') },
            on: { LEAVE: 'leaf' },
            states: { b: { ...traced(trace, 'b'), initial: 'c', states: { c: traced(trace, 'c') } } },
          },
          leaf: { ...traced(trace, 'leaf'), on: { BACK: 'a' } },
        },
      }),
    expectStart: { value: { a: { b: 'c' } }, trace: ['entry:a', 'initial:a', 'entry:b', 'entry:c'] },
    steps: [
      { send: { type: 'LEAVE' }, expect: { value: 'leaf', trace: ['exit:c', 'exit:b', 'exit:a', 'entry:leaf'] } },
      { send: { type: 'BACK' }, expect: { value: { a: { b: 'c' } }, trace: ['entry:a', 'initial:a', 'entry:b', 'entry:c'] } },
    ],
  },
];

/**
 * Group `delay`: time in statecharts. `after` (numbers, named delays, delay functions reading
 * context or the event), delayed `raise` and `sendTo`, `cancel`, timers restarted by re-entry and
 * cancelled by leaving, all with real waits. Adapted from XState's after, actions, interpreter,
 * invoke, predictableExec and clock tests.
 *
 * Timing, on the run's plan (the first step at 100 ms, a send taking 100 ms, a wait its `wait`):
 * every delay is 50–800 ms, and every step ends at least 100 ms from every pending deadline, also
 * counting the ~40 ms of quiet after a step (a send that follows a wait happens that much later).
 */
import { assign, cancel, createMachine, fromCallback, raise, sendParent, sendTo, setup, spawnChild, stopChild, type AnyActorRef, type EventObject } from 'xstate';
import type { ConformanceCase, Trace } from '../case.js';

const AFTER = 'packages/core/test/after.test.ts';
const ACTIONS = 'packages/core/test/actions.test.ts';
const INTERPRETER = 'packages/core/test/interpreter.test.ts';
const INVOKE = 'packages/core/test/invoke.test.ts';
const PREDICTABLE = 'packages/core/test/predictableExec.test.ts';
const CLOCK = 'packages/core/test/clock.test.ts';

/** A traffic light on `after`, 300 ms a colour; yellow's is written as an array of transitions. */
function lightOnAfter(trace: Trace) {
  return setup({}).createMachine({
    id: 'light',
    initial: 'green',
    states: {
      green: { entry: () => trace('entry:green'), after: { 300: 'yellow' } },
      yellow: { entry: () => trace('entry:yellow'), after: { 300: [{ target: 'red' }] } },
      red: { entry: () => trace('entry:red'), after: { 300: 'green' } },
    },
  });
}

/** A traffic light on delayed raises: green's has an id and KEEP_GOING cancels it, yellow's has none, red uses `after`. */
function lightOnRaise(trace: Trace) {
  return setup({}).createMachine({
    id: 'raiseLight',
    initial: 'green',
    states: {
      green: {
        entry: [() => trace('entry:green'), raise({ type: 'TIMER' }, { id: 'greenTimer', delay: 300 })],
        on: {
          TIMER: 'yellow',
          KEEP_GOING: { actions: [cancel('greenTimer'), () => trace('cancel:greenTimer')] },
        },
      },
      yellow: {
        entry: [() => trace('entry:yellow'), raise({ type: 'TIMER' }, { delay: 300 })],
        on: { TIMER: 'red' },
      },
      red: { entry: () => trace('entry:red'), after: { 300: 'green' } },
    },
  });
}

/** An ACTIVATE event carrying the delay to wait. */
const activate = (delay: number): EventObject => ({ type: 'ACTIVATE', delay }) as EventObject;

/** A callback child that traces what it receives (and never sends anything at start). */
function listener(trace: Trace, name: string) {
  return fromCallback(({ receive }) => {
    trace(`${name}:start`);
    receive((event) => trace(`${name}:got ${event.type}`));
  });
}

export const cases: ConformanceCase[] = [
  // ---------------------------------------------------------------- after: basics
  {
    id: 'delay-after-light-cycle',
    from: { file: AFTER, test: 'delayed transitions › should transition after delay' },
    machine: lightOnAfter,
    expectStart: { value: 'green', trace: ['entry:green'] },
    steps: [
      { wait: 350, expect: { value: 'yellow', trace: ['entry:yellow'] } },
      { wait: 300, expect: { value: 'red', trace: ['entry:red'] } },
      { wait: 300, expect: { value: 'green', trace: ['entry:green'] } },
    ],
  },
  {
    id: 'delay-after-nested-initial-to-final',
    from: { file: AFTER, test: 'delayed transitions › should be able to transition with delay from nested initial state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'nestedAfter',
        context: { waited: false },
        initial: 'nested',
        states: {
          nested: {
            initial: 'wait',
            states: {
              wait: {
                entry: () => trace('entry:nested.wait'),
                after: { 300: { target: '#nestedAfterEnd', actions: [assign({ waited: true }), () => trace('after:300')] } },
              },
            },
          },
          end: { id: 'nestedAfterEnd', type: 'final', entry: () => trace('entry:end') },
        },
        output: ({ context }) => ({ waited: context.waited, by: 'timer' }),
      }),
    expectStart: { value: { nested: 'wait' }, status: 'active' },
    steps: [
      { wait: 50, expect: { value: { nested: 'wait' }, status: 'active' } },
      { wait: 300, expect: { value: 'end', status: 'done', trace: ['after:300', 'entry:end'] } },
    ],
  },
  {
    id: 'delay-after-parent-to-relative-child',
    from: { file: AFTER, test: 'delayed transitions › parent state should enter child state without re-entering self (relative target)' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'relativeAfter',
        initial: 'one',
        states: {
          one: {
            initial: 'two',
            entry: () => trace('entry:one'),
            exit: () => trace('exit:one'),
            states: {
              two: { entry: () => trace('entry:two'), exit: () => trace('exit:two') },
              three: { entry: () => trace('entry:three'), always: '#relativeAfterEnd' },
            },
            after: { 300: '.three' },
          },
          end: { id: 'relativeAfterEnd', type: 'final', entry: () => trace('entry:end') },
        },
      }),
    expectStart: { value: { one: 'two' }, trace: ['entry:one', 'entry:two'] },
    steps: [
      { wait: 50, expect: { value: { one: 'two' } } },
      { wait: 300, expect: { value: 'end', status: 'done', trace: ['exit:two', 'entry:three', 'exit:one', 'entry:end'] } },
    ],
  },
  {
    id: 'delay-after-final-parent-output',
    from: { file: AFTER, test: 'delayed transitions › should be able to transition with delay from nested initial state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'jobAfter',
        context: { attempts: 0, result: '' },
        initial: 'job',
        states: {
          job: {
            initial: 'running',
            entry: () => trace('entry:job'),
            states: {
              running: {
                entry: [assign({ attempts: ({ context }) => context.attempts + 1 }), () => trace('entry:running')],
                after: { 300: { target: 'finished', actions: [assign({ result: 'timed out' }), () => trace('after:running')] } },
              },
              finished: { type: 'final', entry: () => trace('entry:finished') },
            },
            onDone: { target: 'complete', actions: () => trace('job.done') },
          },
          complete: { type: 'final', entry: () => trace('entry:complete') },
        },
        output: ({ context }) => ({ result: context.result, attempts: context.attempts }),
      }),
    expectStart: { value: { job: 'running' }, trace: ['entry:job', 'entry:running'] },
    steps: [
      { wait: 50, expect: { value: { job: 'running' }, status: 'active' } },
      { wait: 300, expect: { value: 'complete', status: 'done', trace: ['after:running', 'entry:finished', 'job.done', 'entry:complete'] } },
    ],
  },
  // ---------------------------------------------------------------- after: guards
  {
    id: 'delay-after-guard-true',
    from: { file: AFTER, test: 'delayed transitions › should defer a single send event for a delayed conditional transition (#886)' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'guardTrue',
        initial: 'X',
        states: {
          X: {
            entry: () => trace('entry:X'),
            after: {
              250: [
                { target: 'Y', guard: () => true, actions: () => trace('after:guarded') },
                { target: 'Z', actions: () => trace('after:fallback') },
              ],
            },
          },
          Y: { entry: () => trace('entry:Y'), on: { '*': { actions: ({ event }) => trace(`Y:any ${event.type}`) } } },
          Z: { entry: () => trace('entry:Z') },
        },
      }),
    steps: [
      { wait: 300, expect: { value: 'Y', trace: ['after:guarded', 'entry:Y'] } },
      { send: { type: 'POKE' }, expect: { value: 'Y', trace: ['Y:any POKE'] } },
    ],
  },
  {
    id: 'delay-after-guard-false-consumed',
    from: { file: AFTER, test: 'delayed transitions › should defer a single send event for a delayed conditional transition (#886)' },
    machine: (trace) =>
      setup({
        guards: { armed: ({ context }) => context.armed === true },
      }).createMachine({
        id: 'guardFalse',
        context: { armed: false },
        initial: 'idle',
        states: {
          idle: {
            entry: () => trace('entry:idle'),
            after: { 250: { target: 'fired', guard: 'armed', actions: () => trace('after:fired') } },
            on: { ARM: { actions: [assign({ armed: true }), () => trace('armed')] } },
          },
          fired: { type: 'final', entry: () => trace('entry:fired') },
        },
      }),
    steps: [
      // The timer fires with a false guard: nothing happens, and it is spent.
      { wait: 300, expect: { value: 'idle', status: 'active' } },
      { send: { type: 'ARM' }, expect: { value: 'idle', trace: ['armed'] } },
      { wait: 400, expect: { value: 'idle', status: 'active' } },
    ],
  },
  {
    id: 'delay-after-guard-fallback',
    from: { file: AFTER, test: 'delayed transitions › should defer a single send event for a delayed conditional transition (#886)' },
    machine: (trace) =>
      setup({
        guards: {
          atLeast: ({ context }, params: { min: number }) => context.level >= params.min,
        },
      }).createMachine({
        id: 'guardFallback',
        context: { level: 3 },
        initial: 'measuring',
        states: {
          measuring: {
            entry: () => trace('entry:measuring'),
            after: {
              250: [
                { target: 'high', guard: { type: 'atLeast', params: { min: 5 } }, actions: () => trace('after:high') },
                { target: 'low', actions: ({ context }) => trace(`after:low level=${context.level}`) },
              ],
            },
          },
          high: { entry: () => trace('entry:high') },
          low: { entry: () => trace('entry:low') },
        },
      }),
    steps: [
      { wait: 300, expect: { value: 'low', trace: ['after:low level=3', 'entry:low'] } },
    ],
  },
  // ---------------------------------------------------------------- after: delays by name and expression
  {
    id: 'delay-after-named-delays',
    from: { file: INTERPRETER, test: 'interpreter › send with delay › can send an event after a delay (delayed transitions)' },
    machine: (trace) =>
      setup({
        types: {} as { context: { base: number }; events: { type: 'FIRE_DELAY'; value: number } },
        delays: {
          short: ({ context }) => context.base,
          long: ({ context }) => context.base + 100,
          withEvent: ({ context, event }) => context.base + (event.type === 'FIRE_DELAY' ? event.value : 0),
        },
      }).createMachine({
        id: 'letter',
        context: { base: 200 },
        initial: 'a',
        states: {
          a: { entry: () => trace('entry:a'), after: { short: 'b' } },
          b: { entry: () => trace('entry:b'), after: { long: 'c' } },
          c: {
            entry: [() => trace('entry:c'), raise({ type: 'FIRE_DELAY', value: 100 }, { delay: 100 })],
            on: { FIRE_DELAY: 'd' },
          },
          d: { entry: ({ event }) => trace(`entry:d by ${event.type}`), after: { withEvent: 'e' } },
          e: { entry: () => trace('entry:e'), after: { long: 'f' } },
          f: { type: 'final', entry: () => trace('entry:f') },
        },
      }),
    // a→b at 200, b→c at 500, c→d at 600, d→e at 900 (200 + the raised event's 100), e→f at 1200.
    steps: [
      { wait: 250, expect: { value: 'b', trace: ['entry:b'] } },
      { wait: 400, expect: { value: 'd', trace: ['entry:c', 'entry:d by FIRE_DELAY'] } },
      { wait: 300, expect: { value: 'e', trace: ['entry:e'] } },
      { wait: 300, expect: { value: 'f', status: 'done', trace: ['entry:f'] } },
    ],
  },
  {
    id: 'delay-after-delay-from-input-context',
    from: { file: AFTER, test: 'delayed transitions › delay expressions › should evaluate the expression (function) to determine the delay' },
    machine: (trace) =>
      setup({
        types: {} as { context: { delay: number }; input: { delay: number } },
        delays: { myDelay: ({ context }) => context.delay },
      }).createMachine({
        id: 'delayFromContext',
        context: ({ input }) => ({ delay: input.delay }),
        initial: 'inactive',
        states: {
          inactive: { entry: () => trace('entry:inactive'), after: { myDelay: 'active' } },
          active: { entry: () => trace('entry:active') },
        },
      }),
    input: { delay: 300 },
    steps: [
      { wait: 50, expect: { value: 'inactive' } },
      { wait: 300, expect: { value: 'active', trace: ['entry:active'] } },
    ],
  },
  {
    id: 'delay-after-delay-from-event',
    from: { file: AFTER, test: 'delayed transitions › delay expressions › should evaluate the expression (string) to determine the delay' },
    machine: (trace) =>
      setup({
        types: {} as { events: { type: 'ACTIVATE'; delay: number } },
        delays: { someDelay: ({ event }) => event.delay },
      }).createMachine({
        id: 'delayFromEvent',
        initial: 'inactive',
        states: {
          inactive: { entry: () => trace('entry:inactive'), on: { ACTIVATE: 'active' } },
          active: { entry: ({ event }) => trace(`entry:active for ${event.delay}`), after: { someDelay: 'inactive' } },
        },
      }),
    steps: [
      { send: activate(300), expect: { value: 'active', trace: ['entry:active for 300'] } },
      { wait: 50, expect: { value: 'active' } },
      { wait: 300, expect: { value: 'inactive', trace: ['entry:inactive'] } },
      { send: activate(200), expect: { value: 'active', trace: ['entry:active for 200'] } },
      { wait: 300, expect: { value: 'inactive', trace: ['entry:inactive'] } },
    ],
  },
  {
    id: 'delay-after-delay-reads-entry-assign',
    from: { file: PREDICTABLE, test: 'predictableExec › initial actions should receive context updated only by preceding assign actions' },
    machine: (trace) =>
      setup({
        types: {} as { context: { wait: number } },
        delays: { fromContext: ({ context }) => context.wait },
      }).createMachine({
        id: 'delayAfterAssign',
        // The entry assign runs before the delay is computed: 300 ms, not 60.
        context: { wait: 60 },
        initial: 'a',
        states: {
          a: {
            entry: [assign({ wait: 300 }), ({ context }) => trace(`entry:a wait=${context.wait}`)],
            after: { fromContext: { target: 'b', actions: () => trace('after:fromContext') } },
          },
          b: { entry: () => trace('entry:b') },
        },
      }),
    expectStart: { value: 'a', trace: ['entry:a wait=300'] },
    steps: [
      { wait: 50, expect: { value: 'a' } },
      { wait: 300, expect: { value: 'b', trace: ['after:fromContext', 'entry:b'] } },
    ],
  },
  // ---------------------------------------------------------------- after: several, parallel, nested
  {
    id: 'delay-after-earliest-wins',
    from: { file: AFTER, test: 'delayed transitions › should transition after delay' },
    machine: (trace) =>
      setup({ delays: { mid: 500 } }).createMachine({
        id: 'earliest',
        initial: 'a',
        states: {
          a: {
            entry: () => trace('entry:a'),
            exit: () => trace('exit:a'),
            after: {
              700: { target: 'slow', actions: () => trace('after:700') },
              300: { target: 'fast', actions: () => trace('after:300') },
              mid: { target: 'mid', actions: () => trace('after:mid') },
            },
          },
          fast: { entry: () => trace('entry:fast') },
          mid: { entry: () => trace('entry:mid') },
          slow: { entry: () => trace('entry:slow') },
        },
      }),
    steps: [
      { wait: 50, expect: { value: 'a' } },
      // The others were cancelled when `a` was left: still in `fast` after their deadlines.
      { wait: 700, expect: { value: 'fast', trace: ['exit:a', 'after:300', 'entry:fast'] } },
    ],
  },
  {
    id: 'delay-after-parallel-regions',
    from: { file: AFTER, test: 'delayed transitions › should transition after delay' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'parallelAfter',
        type: 'parallel',
        states: {
          A: {
            initial: 'a1',
            states: {
              a1: { entry: () => trace('entry:a1'), after: { 250: 'a2' } },
              a2: { entry: () => trace('entry:a2') },
            },
          },
          B: {
            initial: 'b1',
            states: {
              b1: { entry: () => trace('entry:b1'), exit: () => trace('exit:b1'), after: { 600: 'b2' } },
              b2: { entry: () => trace('entry:b2') },
            },
          },
          C: {
            initial: 'c1',
            states: {
              c1: { entry: () => trace('entry:c1'), on: { FLIP: 'c2' } },
              c2: { entry: () => trace('entry:c2') },
            },
          },
        },
      }),
    expectStart: { value: { A: 'a1', B: 'b1', C: 'c1' }, trace: ['entry:a1', 'entry:b1', 'entry:c1'] },
    steps: [
      // A transition in another region does not touch the timers of A and B.
      { send: { type: 'FLIP' }, expect: { value: { A: 'a1', B: 'b1', C: 'c2' }, trace: ['entry:c2'] } },
      { wait: 200, expect: { value: { A: 'a2', B: 'b1', C: 'c2' }, trace: ['entry:a2'] } },
      { wait: 350, expect: { value: { A: 'a2', B: 'b2', C: 'c2' }, trace: ['exit:b1', 'entry:b2'] } },
    ],
  },
  {
    id: 'delay-after-parent-timer-survives-child-moves',
    from: { file: AFTER, test: 'delayed transitions › should be able to transition with delay from nested initial state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'nestedTimers',
        initial: 'P',
        states: {
          P: {
            initial: 'c1',
            entry: () => trace('entry:P'),
            exit: () => trace('exit:P'),
            after: { 600: { target: 'Q', actions: () => trace('after:P') } },
            states: {
              c1: { entry: () => trace('entry:c1'), after: { 300: 'c2' } },
              c2: { entry: () => trace('entry:c2') },
            },
          },
          Q: { entry: () => trace('entry:Q') },
        },
      }),
    expectStart: { value: { P: 'c1' }, trace: ['entry:P', 'entry:c1'] },
    steps: [
      { wait: 50, expect: { value: { P: 'c1' } } },
      { wait: 300, expect: { value: { P: 'c2' }, trace: ['entry:c2'] } },
      { wait: 300, expect: { value: 'Q', trace: ['exit:P', 'after:P', 'entry:Q'] } },
    ],
  },
  // ---------------------------------------------------------------- after: leaving, re-entering
  {
    id: 'delay-after-left-before-fire',
    from: { file: AFTER, test: 'delayed transitions › should not try to clear an undefined timeout when exiting source state of a delayed transition' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'leftEarly',
        initial: 'a',
        states: {
          a: {
            entry: () => trace('entry:a'),
            exit: () => trace('exit:a'),
            after: { 300: { target: 'b', actions: () => trace('after:a') } },
            on: { LEAVE: 'c' },
          },
          b: { entry: () => trace('entry:b') },
          c: { entry: () => trace('entry:c') },
        },
      }),
    steps: [
      { send: { type: 'LEAVE' }, expect: { value: 'c', trace: ['exit:a', 'entry:c'] } },
      { wait: 450, expect: { value: 'c' } },
    ],
  },
  {
    id: 'delay-after-leave-and-return-restarts',
    from: { file: AFTER, test: 'delayed transitions › should execute an after transition after starting from a persisted state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'leaveReturn',
        context: { entries: 0 },
        initial: 'a',
        states: {
          a: {
            entry: [assign({ entries: ({ context }) => context.entries + 1 }), ({ context }) => trace(`entry:a #${context.entries}`)],
            after: { 600: { target: 'b', actions: ({ context }) => trace(`after:a in #${context.entries}`) } },
            on: { LEAVE: 'away' },
          },
          away: { entry: () => trace('entry:away'), on: { BACK: 'a' } },
          b: { type: 'final', entry: () => trace('entry:b') },
        },
      }),
    steps: [
      { wait: 300, expect: { value: 'a' } },
      { send: { type: 'LEAVE' }, expect: { value: 'away' } },
      { send: { type: 'BACK' }, expect: { value: 'a', trace: ['entry:a #2'] } },
      // Past the first timer's deadline, before the restarted one's.
      { wait: 250, expect: { value: 'a' } },
      { wait: 400, expect: { value: 'b', status: 'done', trace: ['after:a in #2', 'entry:b'] } },
    ],
  },
  {
    id: 'delay-after-reenter-restarts',
    from: { file: ACTIONS, test: 'entry/exit actions › entry/exit actions › should exit and enter the state for reentering self-transitions (shallow)' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'reenterRestart',
        initial: 'a',
        states: {
          a: {
            entry: () => trace('entry:a'),
            exit: () => trace('exit:a'),
            after: { 700: { target: 'timeout', actions: () => trace('after:a') } },
            on: { POKE: { target: 'a', reenter: true } },
          },
          timeout: { entry: () => trace('entry:timeout') },
        },
      }),
    steps: [
      { wait: 300, expect: { value: 'a' } },
      { send: { type: 'POKE' }, expect: { value: 'a', trace: ['exit:a', 'entry:a'] } },
      { wait: 400, expect: { value: 'a' } },
      { wait: 400, expect: { value: 'timeout', trace: ['after:a', 'entry:timeout'] } },
    ],
  },
  {
    id: 'delay-after-reenter-loop-counts',
    from: { file: ACTIONS, test: 'entry/exit actions › entry/exit actions › should reenter leaf state during its reentering self-transition' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'tickLoop',
        context: { count: 0 },
        initial: 'ticking',
        states: {
          ticking: {
            entry: ({ context }) => trace(`entry:ticking count=${context.count}`),
            after: {
              300: [
                { guard: ({ context }) => context.count >= 3, target: 'done' },
                { target: 'ticking', reenter: true, actions: assign({ count: ({ context }) => context.count + 1 }) },
              ],
            },
          },
          done: { type: 'final', entry: () => trace('entry:done') },
        },
        output: ({ context }) => ({ ticks: context.count }),
      }),
    // Fires at 300, 600, 900 (count 1, 2, 3), then at 1200 the guard leaves.
    steps: [
      { wait: 350, expect: { value: 'ticking', trace: ['entry:ticking count=1'] } },
      { wait: 600, expect: { value: 'ticking', trace: ['entry:ticking count=2', 'entry:ticking count=3'] } },
      { wait: 300, expect: { value: 'done', status: 'done', trace: ['entry:done'] } },
    ],
  },
  {
    id: 'delay-after-self-target-no-reenter-fires-once',
    from: { file: ACTIONS, test: 'entry/exit actions › entry/exit actions › should not reenter leaf state during its default self-transition' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'selfNoReenter',
        context: { count: 0 },
        initial: 'a',
        states: {
          a: {
            entry: () => trace('entry:a'),
            exit: () => trace('exit:a'),
            // Targets itself without reenter: not exited, so its timer is not scheduled again.
            after: { 250: { target: 'a', actions: [assign({ count: ({ context }) => context.count + 1 }), () => trace('after:a')] } },
          },
        },
      }),
    steps: [
      { wait: 300, expect: { value: 'a', trace: ['after:a'] } },
      { wait: 500, expect: { value: 'a' } },
    ],
  },
  {
    id: 'delay-after-targetless-fires-once',
    from: { file: ACTIONS, test: "entry/exit actions › targetless transitions › shouldn't exit (and reenter) state on targetless delayed transition" },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'targetlessAfter',
        context: { ticks: 0 },
        initial: 'one',
        states: {
          one: {
            entry: () => trace('entry:one'),
            exit: () => trace('exit:one'),
            after: { 250: { actions: [assign({ ticks: ({ context }) => context.ticks + 1 }), () => trace('after:tick')] } },
          },
        },
      }),
    steps: [
      { wait: 300, expect: { value: 'one', trace: ['after:tick'] } },
      { wait: 500, expect: { value: 'one' } },
    ],
  },
  // ---------------------------------------------------------------- delayed raise, cancel
  {
    id: 'delay-raise-handled-in-next-state',
    from: { file: ACTIONS, test: 'raise › should be able to send a delayed event to itself' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'raiseLater',
        initial: 'a',
        states: {
          a: { entry: [() => trace('entry:a'), raise({ type: 'EVENT' }, { delay: 300 })], on: { TO_B: 'b' } },
          b: { entry: () => trace('entry:b'), on: { EVENT: { target: 'c', actions: () => trace('b:got EVENT') } } },
          c: { type: 'final', entry: () => trace('entry:c') },
        },
      }),
    steps: [
      { send: { type: 'TO_B' }, expect: { value: 'b', trace: ['entry:b'] } },
      { wait: 300, expect: { value: 'c', status: 'done', trace: ['b:got EVENT', 'entry:c'] } },
    ],
  },
  {
    id: 'delay-raise-same-state',
    from: { file: ACTIONS, test: 'raise › should be able to raise a delayed event and respond to it in the same state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'raiseSame',
        initial: 'a',
        states: {
          a: { entry: [() => trace('entry:a'), raise({ type: 'TO_B' }, { delay: 300 })], on: { TO_B: 'b' } },
          b: { type: 'final', entry: () => trace('entry:b') },
        },
      }),
    steps: [
      { wait: 50, expect: { value: 'a', status: 'active' } },
      { wait: 300, expect: { value: 'b', status: 'done', trace: ['entry:b'] } },
    ],
  },
  {
    id: 'delay-raise-from-exit',
    from: { file: ACTIONS, test: 'raise › should be able to send a delayed event to itself' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'raiseFromExit',
        initial: 'a',
        states: {
          a: { exit: [() => trace('exit:a'), raise({ type: 'FOLLOW_UP', from: 'a' }, { delay: 300 })], on: { GO: 'b' } },
          b: {
            entry: () => trace('entry:b'),
            on: { FOLLOW_UP: { target: 'c', actions: ({ event }) => trace(`b:got FOLLOW_UP from ${String(event.from)}`) } },
          },
          c: { entry: () => trace('entry:c') },
        },
      }),
    steps: [
      { send: { type: 'GO' }, expect: { value: 'b', trace: ['exit:a', 'entry:b'] } },
      { wait: 50, expect: { value: 'b' } },
      { wait: 300, expect: { value: 'c', trace: ['b:got FOLLOW_UP from a', 'entry:c'] } },
    ],
  },
  {
    id: 'delay-raise-light-cycle',
    from: { file: INTERPRETER, test: 'interpreter › send with delay › can send an event after a delay' },
    machine: lightOnRaise,
    expectStart: { value: 'green', trace: ['entry:green'] },
    steps: [
      { wait: 350, expect: { value: 'yellow', trace: ['entry:yellow'] } },
      { wait: 300, expect: { value: 'red', trace: ['entry:red'] } },
      { wait: 300, expect: { value: 'green', trace: ['entry:green'] } },
    ],
  },
  {
    id: 'delay-raise-cancel-keep-going',
    from: { file: INTERPRETER, test: 'interpreter › can cancel a delayed event' },
    machine: lightOnRaise,
    steps: [
      { wait: 50, expect: { value: 'green' } },
      { send: { type: 'KEEP_GOING' }, expect: { value: 'green', trace: ['cancel:greenTimer'] } },
      { wait: 400, expect: { value: 'green' } },
    ],
  },
  {
    id: 'delay-raise-cancel-by-id',
    from: { file: ACTIONS, test: 'cancel › should be possible to cancel a raised delayed event' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'cancelRaise',
        context: { scheduled: 0 },
        initial: 'a',
        states: {
          a: {
            on: {
              NEXT: {
                actions: [
                  assign({ scheduled: ({ context }) => context.scheduled + 1 }),
                  raise({ type: 'RAISED' }, { delay: 300, id: 'myId' }),
                  () => trace('scheduled:myId'),
                ],
              },
              RAISED: { target: 'b', actions: () => trace('a:got RAISED') },
              CANCEL: { actions: [cancel('myId'), () => trace('cancelled:myId')] },
            },
          },
          b: { entry: () => trace('entry:b') },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { trace: ['scheduled:myId'] } },
      { send: { type: 'CANCEL' }, expect: { trace: ['cancelled:myId'] } },
      { wait: 400, expect: { value: 'a' } },
      // Scheduled again and left alone: it fires.
      { send: { type: 'NEXT' }, expect: { value: 'a', trace: ['scheduled:myId'] } },
      { wait: 400, expect: { value: 'b', trace: ['a:got RAISED', 'entry:b'] } },
    ],
  },
  {
    id: 'delay-raise-cancel-id-expression',
    from: { file: INTERPRETER, test: 'interpreter › can cancel a delayed event using expression to resolve send id' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'cancelExpr',
        context: { victim: 'foo' },
        initial: 'first',
        states: {
          first: {
            entry: [
              raise({ type: 'FOO' }, { id: 'foo', delay: 250 }),
              raise({ type: 'BAR' }, { delay: 500 }),
              cancel(({ context }) => context.victim),
              () => trace('entry:first'),
            ],
            on: { FOO: 'fail', BAR: 'pass' },
          },
          fail: { type: 'final', entry: () => trace('entry:fail') },
          pass: { type: 'final', entry: () => trace('entry:pass') },
        },
      }),
    steps: [
      { wait: 200, expect: { value: 'first', status: 'active' } },
      { wait: 350, expect: { value: 'pass', status: 'done', trace: ['entry:pass'] } },
    ],
  },
  {
    id: 'delay-raise-payload-from-context',
    from: { file: ACTIONS, test: 'raise › should be possible to access context in the event expression' },
    machine: (trace) =>
      setup({
        types: {} as {
          context: { eventType: string; amount: number; total: number };
          events: { type: 'NEXT' } | { type: 'RAISED'; amount: number };
        },
      }).createMachine({
        id: 'raiseFromContext',
        context: { eventType: 'RAISED', amount: 5, total: 0 },
        initial: 'a',
        states: {
          a: {
            on: {
              NEXT: {
                // The payload is read when the event is scheduled: 5, not the 99 assigned after.
                actions: [
                  raise(({ context }) => ({ type: context.eventType, amount: context.amount }) as { type: 'RAISED'; amount: number }, { delay: 300 }),
                  assign({ amount: 99 }),
                ],
              },
              RAISED: {
                target: 'b',
                actions: [assign({ total: ({ context, event }) => context.total + event.amount }), ({ event }) => trace(`a:got RAISED ${event.amount}`)],
              },
            },
          },
          b: { entry: ({ context }) => trace(`entry:b total=${context.total}`) },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: 'a' } },
      { wait: 50, expect: { value: 'a' } },
      { wait: 300, expect: { value: 'b', trace: ['a:got RAISED 5', 'entry:b total=5'] } },
    ],
  },
  {
    id: 'delay-raise-deadline-order',
    from: { file: INTERPRETER, test: 'interpreter › send with delay › can send an event after a delay' },
    machine: (trace) =>
      setup({
        types: {} as { context: { log: string[] }; events: { type: 'A' } | { type: 'B' } | { type: 'C' } },
      }).createMachine({
        id: 'deadlineOrder',
        context: { log: [] },
        initial: 'waiting',
        states: {
          waiting: {
            // Scheduled C, A, B; they fire A, B, C.
            entry: [raise({ type: 'C' }, { delay: 750, id: 'c' }), raise({ type: 'A' }, { delay: 150 }), raise({ type: 'B' }, { delay: 450, id: 'b' })],
            on: {
              A: { actions: [assign({ log: ({ context }) => [...context.log, 'A'] }), () => trace('got A')] },
              B: { actions: [assign({ log: ({ context }) => [...context.log, 'B'] }), () => trace('got B')] },
              C: { target: 'done', actions: [assign({ log: ({ context }) => [...context.log, 'C'] }), () => trace('got C')] },
            },
          },
          done: { type: 'final', entry: () => trace('entry:done') },
        },
        output: ({ context }) => context.log,
      }),
    steps: [
      { wait: 200, expect: { value: 'waiting', trace: ['got A'] } },
      { wait: 300, expect: { value: 'waiting', trace: ['got B'] } },
      { wait: 300, expect: { value: 'done', status: 'done', trace: ['got C', 'entry:done'] } },
    ],
  },
  {
    id: 'delay-cancel-same-id-in-child-machines',
    from: {
      file: ACTIONS,
      test: 'cancel › should cancel only the delayed event in the machine that scheduled it when canceling the event with the same ID in the machine that sent it first',
    },
    refused: 'stateful_child',
    machine: (trace) => {
      const child = (name: string) =>
        createMachine({
          id: name,
          entry: [raise({ type: 'event' }, { id: 'sameId', delay: 400 }), () => trace(`${name}:scheduled`)],
          on: {
            event: { actions: () => trace(`${name}:event`) },
            cancel: { actions: [cancel('sameId'), () => trace(`${name}:cancelled`)] },
          },
        });
      return setup({ actors: { foo: child('foo'), bar: child('bar') } }).createMachine({
        id: 'sameIdParent',
        invoke: [
          { id: 'foo', src: 'foo' },
          { id: 'bar', src: 'bar' },
        ],
        on: { cancelFoo: { actions: sendTo('foo', { type: 'cancel' }) } },
      });
    },
    steps: [
      { wait: 100 },
      { send: { type: 'cancelFoo' }, expect: { trace: ['foo:cancelled'] } },
      { wait: 450, expect: { trace: ['bar:event'] } },
    ],
  },
  // ---------------------------------------------------------------- delayed sendTo
  {
    id: 'delay-sendto-invoked-callback',
    from: { file: ACTIONS, test: 'sendTo › should be able to send an event to a named actor' },
    machine: (trace) =>
      setup({
        actors: {
          listener: fromCallback(({ receive, sendBack }) => {
            trace('cb:start');
            receive((event) => {
              trace(`cb:got ${event.type}`);
              sendBack({ type: 'ACK' });
            });
          }),
        },
      }).createMachine({
        id: 'sendLater',
        context: { acks: 0 },
        initial: 'idle',
        states: {
          idle: { on: { GO: 'b' } },
          b: {
            invoke: { id: 'child', src: 'listener' },
            entry: [() => trace('entry:b'), sendTo('child', { type: 'HELLO' }, { delay: 300 })],
            on: { ACK: { actions: [assign({ acks: ({ context }) => context.acks + 1 }), () => trace('parent:got ACK')] } },
          },
        },
      }),
    steps: [
      { send: { type: 'GO' }, expect: { value: 'b', trace: ['entry:b', 'cb:start'] } },
      { wait: 50, expect: { value: 'b' } },
      { wait: 300, expect: { value: 'b', trace: ['cb:got HELLO', 'parent:got ACK'] } },
    ],
  },
  {
    id: 'delay-sendto-payload-from-context',
    from: { file: ACTIONS, test: 'sendTo › should be able to send an event from expression to an actor' },
    machine: (trace) =>
      createMachine({
        types: {} as { context: { count: number } },
        id: 'sendFromContext',
        context: { count: 42 },
        invoke: {
          id: 'child',
          src: fromCallback(({ receive }) => {
            trace('cb:start');
            receive((event) => trace(`cb:got ${event.type} ${String((event as { count?: unknown }).count)}`));
          }),
        },
        on: {
          SEND: {
            // The payload is read when the event is scheduled: 42, not the 7 assigned after.
            actions: [sendTo('child', ({ context }) => ({ type: 'EVENT', count: context.count }), { delay: 300 }), assign({ count: 7 })],
          },
        },
      }),
    expectStart: { trace: ['cb:start'] },
    steps: [
      { send: { type: 'SEND' } },
      { wait: 50 },
      { wait: 300, expect: { trace: ['cb:got EVENT 42'] } },
    ],
  },
  {
    id: 'delay-sendto-origin-self-answered',
    from: { file: INVOKE, test: 'invoke › should be able to receive a delayed event sent by the entry action of the invoking state' },
    machine: (trace) =>
      setup({
        actors: {
          responder: fromCallback(({ receive }) => {
            trace('cb:start');
            receive((event) => {
              trace(`cb:got ${event.type}`);
              if (event.type === 'PING') (event as unknown as { origin: AnyActorRef }).origin.send({ type: 'PONG' });
            });
          }),
        },
      }).createMachine({
        id: 'pingPong',
        context: { pongs: 0 },
        initial: 'a',
        states: {
          a: { on: { NEXT: 'b' } },
          b: {
            invoke: { id: 'foo', src: 'responder' },
            entry: [() => trace('entry:b'), sendTo('foo', ({ self }) => ({ type: 'PING', origin: self }), { delay: 300 })],
            on: { PONG: { target: 'c', actions: [assign({ pongs: ({ context }) => context.pongs + 1 }), () => trace('parent:got PONG')] } },
          },
          c: { type: 'final', entry: () => trace('entry:c') },
        },
        output: ({ context }) => ({ pongs: context.pongs }),
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: 'b', trace: ['entry:b', 'cb:start'] } },
      { wait: 50, expect: { value: 'b' } },
      { wait: 300, expect: { value: 'c', status: 'done', trace: ['cb:got PING', 'parent:got PONG', 'entry:c'] } },
    ],
  },
  {
    id: 'delay-sendto-self-reads-updated-context',
    from: { file: ACTIONS, test: 'sendTo › a self-event "handler" of an event sent using sendTo should be able to read updated snapshot of self' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'sendToSelf',
        context: { counter: 0 },
        initial: 'a',
        states: {
          a: { on: { NEXT: 'b' } },
          b: {
            entry: [assign({ counter: 1 }), sendTo(({ self }) => self, { type: 'EVENT' }, { delay: 300 })],
            on: {
              BUMP: { actions: assign({ counter: ({ context }) => context.counter + 10 }) },
              EVENT: { target: 'c', actions: ({ self }) => trace(`b:got EVENT counter=${String(self.getSnapshot().context.counter)}`) },
            },
          },
          c: { entry: () => trace('entry:c') },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: 'b' } },
      { send: { type: 'BUMP' }, expect: { value: 'b' } },
      { wait: 400, expect: { value: 'c', trace: ['b:got EVENT counter=11', 'entry:c'] } },
    ],
  },
  {
    id: 'delay-sendto-cancelled-before-child-gets-it',
    from: { file: ACTIONS, test: 'cancel › should be able to cancel a just scheduled delayed event to a just invoked child' },
    machine: (trace) =>
      setup({ actors: { child: listener(trace, 'cb') } }).createMachine({
        id: 'cancelSendTo',
        initial: 'a',
        states: {
          a: { on: { START: 'b' } },
          b: {
            entry: [sendTo('myChild', { type: 'PING' }, { id: 'myEvent', delay: 300 }), cancel('myEvent'), () => trace('entry:b')],
            invoke: { src: 'child', id: 'myChild' },
            on: { RESEND: { actions: [sendTo('myChild', { type: 'PING_AGAIN' }, { id: 'again', delay: 300 }), () => trace('resend')] } },
          },
        },
      }),
    steps: [
      { send: { type: 'START' }, expect: { value: 'b', trace: ['entry:b', 'cb:start'] } },
      { wait: 450, expect: { value: 'b' } },
      { send: { type: 'RESEND' }, expect: { trace: ['resend'] } },
      { wait: 400, expect: { value: 'b', trace: ['cb:got PING_AGAIN'] } },
    ],
  },
  {
    id: 'delay-sendto-invoked-child-replaced',
    from: {
      file: ACTIONS,
      test: "sendTo › should not attempt to deliver a delayed event to the invoked actor's ID that was stopped since the event was scheduled",
    },
    machine: (trace) =>
      setup({ actors: { child1: listener(trace, 'cb1'), child2: listener(trace, 'cb2') } }).createMachine({
        id: 'invokedReplaced',
        initial: 'a',
        states: {
          a: { on: { START: 'b' } },
          b: {
            entry: [() => trace('entry:b'), sendTo('myChild', { type: 'PING' }, { delay: 300 })],
            invoke: { src: 'child1', id: 'myChild' },
            on: { NEXT: 'c' },
          },
          c: {
            entry: () => trace('entry:c'),
            invoke: { src: 'child2', id: 'myChild' },
            on: { POKE: { actions: sendTo('myChild', { type: 'POKED' }) } },
          },
        },
      }),
    steps: [
      { send: { type: 'START' }, expect: { value: 'b', trace: ['cb1:start'] } },
      { send: { type: 'NEXT' }, expect: { value: 'c', trace: ['cb2:start'] } },
      // The PING was addressed to the first child, stopped since: nobody gets it.
      { wait: 450, expect: { value: 'c' } },
      { send: { type: 'POKE' }, expect: { trace: ['cb2:got POKED'] } },
    ],
  },
  {
    id: 'delay-sendto-spawned-child-replaced',
    from: {
      file: ACTIONS,
      test: "sendTo › should not attempt to deliver a delayed event to the spawned actor's ID that was stopped since the event was scheduled",
    },
    machine: (trace) =>
      setup({ actors: { child1: listener(trace, 'cb1'), child2: listener(trace, 'cb2') } }).createMachine({
        id: 'spawnedReplaced',
        initial: 'a',
        states: {
          a: { on: { START: 'b' } },
          b: {
            entry: [
              spawnChild('child1', { id: 'myChild' }),
              sendTo('myChild', { type: 'PING' }, { delay: 300 }),
              stopChild('myChild'),
              spawnChild('child2', { id: 'myChild' }),
              () => trace('entry:b'),
            ],
            on: { POKE: { actions: sendTo('myChild', { type: 'POKED' }) } },
          },
        },
      }),
    steps: [
      { send: { type: 'START' }, expect: { value: 'b', trace: ['entry:b'] } },
      { wait: 450, expect: { value: 'b' } },
      { send: { type: 'POKE' }, expect: { trace: ['cb2:got POKED'] } },
    ],
  },
  // ---------------------------------------------------------------- child machines with timers (refused by the runtime)
  {
    id: 'delay-child-machine-after-then-parent-reads-it',
    from: { file: PREDICTABLE, test: 'predictableExec › parent should be able to read the updated state of a child when receiving an event from it' },
    refused: 'stateful_child',
    machine: (trace) => {
      const child = createMachine({
        id: 'timedChild',
        initial: 'a',
        states: {
          a: { entry: () => trace('child:entry:a'), after: { 250: 'b' } },
          b: { entry: [() => trace('child:entry:b'), sendParent({ type: 'CHILD_UPDATED' })] },
        },
      });
      return setup({ actors: { child } }).createMachine({
        id: 'readsChild',
        invoke: { id: 'myChild', src: 'child' },
        initial: 'initial',
        states: {
          initial: {
            on: {
              // Guards get no `self` in v5: the parent reads its child's state in an action instead.
              CHILD_UPDATED: {
                target: 'success',
                actions: ({ self }) => {
                  const child = (self.getSnapshot().children as Record<string, AnyActorRef | undefined>).myChild;
                  trace(`parent saw child in ${JSON.stringify(child?.getSnapshot().value)}`);
                },
              },
            },
          },
          success: { type: 'final', entry: () => trace('entry:success') },
        },
      });
    },
    expectStart: { trace: ['child:entry:a'] },
    steps: [
      { wait: 300, expect: { value: 'success', status: 'done', trace: ['child:entry:b', 'parent saw child in "b"', 'entry:success'] } },
    ],
  },
  {
    id: 'delay-child-machine-own-clock',
    from: { file: CLOCK, test: 'clock › system clock should be default clock for actors (invoked from machine)' },
    refused: 'stateful_child',
    machine: (trace) =>
      setup({
        actors: {
          child: createMachine({
            id: 'clockChild',
            initial: 'a',
            states: {
              a: { entry: () => trace('child:entry:a'), after: { 300: 'b' } },
              b: { entry: () => trace('child:entry:b') },
            },
          }),
        },
      }).createMachine({
        id: 'clockParent',
        invoke: { id: 'child', src: 'child' },
        on: { PING: { actions: () => trace('parent:got PING') } },
      }),
    expectStart: { trace: ['child:entry:a'] },
    steps: [
      { wait: 50, expect: { status: 'active' } },
      { wait: 300, expect: { status: 'active', trace: ['child:entry:b'] } },
    ],
  },
];

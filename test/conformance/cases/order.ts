/**
 * Group `order`: events and the order things run in. Event descriptors (the wildcard `*`, partial
 * descriptors like `foo.*`, explicit ones winning), the order of exit, transition and entry actions
 * (nested, parallel, reentering), `raise` and `sendTo` processed after the current actions,
 * `enqueueActions`, `assign` seen by later actions of the same step, context from `input`,
 * multiple targets, microsteps and `stateIn` guards. Entry/exit/transition actions are traced so
 * that the order is compared, not only where the chart ends up.
 */
import {
  assertEvent,
  assign,
  createMachine,
  enqueueActions,
  fromCallback,
  fromPromise,
  raise,
  sendParent,
  sendTo,
  setup,
  stateIn,
  type AnyEventObject,
  type EventObject,
} from 'xstate';
import type { ConformanceCase, Trace } from '../case.js';

/** Entry and exit actions that trace `entry:<name>` / `exit:<name>`, to spread into a state node. */
const io = (trace: Trace, name: string) => ({
  entry: () => trace(`entry:${name}`),
  exit: () => trace(`exit:${name}`),
});

/** A callback child that traces what it receives, and answers PING with PONG. */
const listener = (trace: Trace) =>
  fromCallback(({ receive, sendBack }) => {
    trace('child:start');
    receive((event) => {
      trace(`child:got ${event.type}`);
      if (event.type === 'PING') sendBack({ type: 'PONG' });
    });
  });

/** An event with a payload, for a step (a step's `send` is typed as a bare EventObject). */
const ev = (type: string, payload: Record<string, unknown>): EventObject => ({ type, ...payload });

const DESC = 'packages/core/test/eventDescriptors.test.ts';
const EXEC = 'packages/core/test/predictableExec.test.ts';
const ACTIONS = 'packages/core/test/actions.test.ts';
const ASSIGN = 'packages/core/test/assign.test.ts';
const INPUT = 'packages/core/test/input.test.ts';
const MICRO = 'packages/core/test/microstep.test.ts';
const STATE_IN = 'packages/core/test/stateIn.test.ts';
const MACHINE = 'packages/core/test/machine.test.ts';
const MULTIPLE = 'packages/core/test/multiple.test.ts';

export const cases: ConformanceCase[] = [
  // ───────────────────────────── event descriptors ─────────────────────────────
  {
    id: 'order-wildcard-fallback',
    from: { file: DESC, test: 'event descriptors › should fallback to using wildcard transition definition (if specified)' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'wildcardFallback',
        initial: 'idle',
        states: {
          idle: {
            on: {
              KNOWN: { target: 'known', actions: () => trace('on:KNOWN') },
              '*': { target: 'other', actions: ({ event }) => trace(`on:*:${event.type}`) },
            },
          },
          known: { on: { BACK: 'idle' } },
          other: { on: { BACK: 'idle' } },
        },
      }),
    steps: [
      { send: { type: 'SOMETHING' }, expect: { value: 'other', trace: ['on:*:SOMETHING'] } },
      { send: { type: 'BACK' }, expect: { value: 'idle' } },
      { send: { type: 'KNOWN' }, expect: { value: 'known', trace: ['on:KNOWN'] } },
      { send: { type: 'BACK' }, expect: { value: 'idle' } },
      { send: { type: 'BACK' }, expect: { value: 'other', trace: ['on:*:BACK'] } },
    ],
  },
  {
    id: 'order-wildcard-explicit-first',
    from: { file: DESC, test: 'event descriptors › should prioritize explicit descriptor even if wildcard comes first' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'explicitOverWildcard',
        initial: 'start',
        states: {
          start: {
            on: {
              '*': { target: 'caughtAll', actions: ({ event }) => trace(`wildcard:${event.type}`) },
              GO: { target: 'went', actions: () => trace('explicit:GO') },
            },
          },
          caughtAll: { on: { RESET: 'start' } },
          went: { on: { RESET: 'start' } },
        },
      }),
    steps: [
      { send: { type: 'GO' }, expect: { value: 'went', trace: ['explicit:GO'] } },
      { send: { type: 'RESET' }, expect: { value: 'start' } },
      { send: { type: 'STOP' }, expect: { value: 'caughtAll', trace: ['wildcard:STOP'] } },
    ],
  },
  {
    id: 'order-partial-explicit-first',
    from: { file: DESC, test: 'event descriptors › should prioritize explicit descriptor even if a partial one comes first' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'explicitOverPartial',
        initial: 'start',
        states: {
          start: {
            on: {
              'file.*': { target: 'generic', actions: ({ event }) => trace(`partial:${event.type}`) },
              'file.open': { target: 'opened', actions: () => trace('explicit:file.open') },
            },
          },
          generic: { on: { RESET: 'start' } },
          opened: { on: { RESET: 'start' } },
        },
      }),
    steps: [
      { send: { type: 'file.open' }, expect: { value: 'opened', trace: ['explicit:file.open'] } },
      { send: { type: 'RESET' }, expect: { value: 'start' } },
      { send: { type: 'file.close' }, expect: { value: 'generic', trace: ['partial:file.close'] } },
    ],
  },
  {
    id: 'order-partial-longer-first',
    from: { file: DESC, test: 'event descriptors › should prioritize a longer descriptor even if the shorter one comes first' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'longerPartial',
        initial: 'start',
        states: {
          start: {
            on: {
              'net.*': { target: 'shorter', actions: ({ event }) => trace(`short:${event.type}`) },
              'net.http.*': { target: 'longer', actions: ({ event }) => trace(`long:${event.type}`) },
            },
          },
          shorter: { on: { RESET: 'start' } },
          longer: { on: { RESET: 'start' } },
        },
      }),
    steps: [
      { send: { type: 'net.http.get' }, expect: { value: 'longer', trace: ['long:net.http.get'] } },
      { send: { type: 'RESET' } },
      { send: { type: 'net.tcp' }, expect: { value: 'shorter', trace: ['short:net.tcp'] } },
      { send: { type: 'RESET' } },
      // `net.http.*` also matches `net.http` itself (zero more tokens).
      { send: { type: 'net.http' }, expect: { value: 'longer', trace: ['long:net.http'] } },
    ],
  },
  {
    id: 'order-partial-guarded-longer',
    from: { file: DESC, test: "event descriptors › should use a shorter descriptor if the longer one doesn't match" },
    machine: (trace) =>
      setup({ guards: { isOpen: ({ context }) => context.open === true } }).createMachine({
        id: 'guardedLonger',
        context: { open: false },
        initial: 'start',
        states: {
          start: {
            on: {
              'ui.button.*': { guard: 'isOpen', target: 'longer', actions: () => trace('long') },
              'ui.*': { target: 'shorter', actions: () => trace('short') },
              OPEN: { actions: [assign({ open: true }), () => trace('opened')] },
            },
          },
          shorter: { on: { RESET: 'start' } },
          longer: { on: { RESET: 'start' } },
        },
      }),
    steps: [
      { send: { type: 'ui.button.click' }, expect: { value: 'shorter', trace: ['short'] } },
      { send: { type: 'RESET' }, expect: { value: 'start' } },
      { send: { type: 'OPEN' }, expect: { trace: ['opened'] } },
      { send: { type: 'ui.button.click' }, expect: { value: 'longer', trace: ['long'] } },
    ],
  },
  {
    id: 'order-partial-exact-guard-fails',
    from: { file: DESC, test: 'event descriptors › should fall back to wildcard descriptor when exact descriptor guard fails' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'exactGuardFails',
        initial: 'start',
        states: {
          start: {
            on: {
              'job.run': { guard: ({ event }) => event.force === true, target: 'forced', actions: () => trace('exact') },
              'job.*': { target: 'queued', actions: ({ event }) => trace(`partial:${event.type}`) },
            },
          },
          forced: { on: { RESET: 'start' } },
          queued: { on: { RESET: 'start' } },
        },
      }),
    steps: [
      { send: { type: 'job.run' }, expect: { value: 'queued', trace: ['partial:job.run'] } },
      { send: { type: 'RESET' } },
      { send: ev('job.run', { force: true }), expect: { value: 'forced', trace: ['exact'] } },
    ],
  },
  {
    id: 'order-wildcard-guarded',
    from: { file: DESC, test: 'event descriptors › should fall back to wildcard descriptor when exact descriptor guard fails' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'guardedWildcard',
        context: { dirty: false, edits: [] as string[] },
        initial: 'editing',
        states: {
          editing: {
            on: {
              SAVE: { guard: ({ context }) => context.dirty === true, target: 'saved', actions: () => trace('save') },
              '*': [
                {
                  guard: ({ event }) => event.type.startsWith('EDIT_'),
                  actions: [
                    assign({ dirty: true, edits: ({ context, event }) => [...(context.edits as string[]), event.type] }),
                    ({ event }) => trace(`edit:${event.type}`),
                  ],
                },
                { actions: ({ event }) => trace(`ignored:${event.type}`) },
              ],
            },
          },
          saved: { on: { REOPEN: 'editing' } },
        },
      }),
    steps: [
      // the explicit SAVE is blocked by its guard: the wildcard takes it, and its own guards pick the second branch
      { send: { type: 'SAVE' }, expect: { value: 'editing', trace: ['ignored:SAVE'] } },
      { send: { type: 'EDIT_TITLE' }, expect: { value: 'editing', trace: ['edit:EDIT_TITLE'] } },
      { send: { type: 'PING' }, expect: { trace: ['ignored:PING'] } },
      { send: { type: 'SAVE' }, expect: { value: 'saved', trace: ['save'] } },
      { send: { type: 'REOPEN' }, expect: { value: 'editing' } },
    ],
  },
  {
    id: 'order-partial-prefix-zero',
    from: { file: DESC, test: 'event descriptors › should support prefix matching with wildcards (+0)' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'prefixZero',
        initial: 'start',
        states: {
          start: { on: { 'event.*': { target: 'success', actions: ({ event }) => trace(`matched:${event.type}`) } } },
          success: { type: 'final' },
        },
      }),
    steps: [
      { send: { type: 'eventually' }, expect: { value: 'start' } },
      { send: { type: 'event' }, expect: { value: 'success', status: 'done', trace: ['matched:event'] } },
    ],
  },
  {
    id: 'order-partial-prefix-one',
    from: { file: DESC, test: 'event descriptors › should support prefix matching with wildcards (+1)' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'prefixOne',
        initial: 'start',
        states: {
          start: { on: { 'event.*': { target: 'success', actions: ({ event }) => trace(`matched:${event.type}`) } } },
          success: { type: 'final' },
        },
      }),
    steps: [
      { send: { type: 'eventually' }, expect: { value: 'start' } },
      { send: { type: 'eventually.event' }, expect: { value: 'start' } },
      { send: { type: 'event.whatever' }, expect: { value: 'success', status: 'done', trace: ['matched:event.whatever'] } },
    ],
  },
  {
    id: 'order-partial-multi-prefix',
    from: { file: DESC, test: 'event descriptors › should support prefix matching with wildcards (+n, multi-prefix)' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'multiPrefix',
        context: { hits: 0 },
        initial: 'listening',
        states: {
          listening: {
            on: {
              'app.user.profile.*': {
                actions: [assign({ hits: ({ context }) => context.hits + 1 }), ({ event }) => trace(`hit:${event.type}`)],
              },
              DONE: 'finished',
            },
          },
          finished: { type: 'final' },
        },
        output: ({ context }) => ({ hits: context.hits }),
      }),
    steps: [
      { send: { type: 'app.user.profile.first.second' }, expect: { trace: ['hit:app.user.profile.first.second'] } },
      { send: { type: 'app.user.settings' } },
      { send: { type: 'app.user' } },
      { send: { type: 'app.user.profile' }, expect: { trace: ['hit:app.user.profile'] } },
      { send: { type: 'DONE' }, expect: { value: 'finished', status: 'done' } },
    ],
  },
  {
    id: 'order-wildcard-not-tokenized',
    from: { file: DESC, test: 'event descriptors › should NOT support non-tokenized wildcards' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'notTokenized',
        initial: 'start',
        states: {
          start: {
            on: {
              'event*': { target: 'success', actions: () => trace('matched') },
              GIVE_UP: { target: 'gaveUp', actions: () => trace('gave-up') },
            },
          },
          success: { type: 'final' },
          gaveUp: { type: 'final' },
        },
      }),
    steps: [
      { send: { type: 'event' }, expect: { value: 'start' } },
      { send: { type: 'eventually' }, expect: { value: 'start' } },
      { send: { type: 'GIVE_UP' }, expect: { value: 'gaveUp', status: 'done', trace: ['gave-up'] } },
    ],
  },
  {
    id: 'order-partial-assert-event',
    from: { file: DESC, test: 'event descriptors › should allow assertEvent to use partial descriptors' },
    machine: (trace) =>
      setup({
        types: {
          events: {} as { type: 'FEEDBACK.MESSAGE'; message: string } | { type: 'FEEDBACK.RATE'; rate: number } | { type: 'OTHER' },
        },
        actions: {
          handleFeedback: ({ event }) => {
            assertEvent(event, 'FEEDBACK.*');
            if (event.type === 'FEEDBACK.MESSAGE') trace(`feedback:message ${event.message}`);
            else trace(`feedback:rate ${event.rate}`);
          },
        },
      }).createMachine({
        id: 'feedback',
        context: { received: 0 },
        initial: 'listening',
        states: {
          listening: {
            on: {
              'FEEDBACK.*': { actions: ['handleFeedback', assign({ received: ({ context }) => context.received + 1 })] },
              OTHER: { actions: () => trace('other') },
            },
          },
        },
      }),
    steps: [
      { send: ev('FEEDBACK.MESSAGE', { message: 'hello' }), expect: { trace: ['feedback:message hello'] } },
      { send: ev('FEEDBACK.RATE', { rate: 5 }), expect: { trace: ['feedback:rate 5'] } },
      { send: { type: 'OTHER' }, expect: { trace: ['other'] } },
    ],
  },

  // ───────────────────────────── predictable execution ─────────────────────────────
  {
    id: 'order-exec-custom-and-assign',
    from: { file: EXEC, test: 'predictableExec › should call mixed custom and builtin actions in the definitions order' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'mixedActions',
        context: { step: 'none' },
        initial: 'a',
        states: {
          a: { on: { NEXT: 'b' } },
          b: {
            entry: [
              ({ context }) => trace(`custom:before ${context.step}`),
              assign({ step: 'assigned' }),
              ({ context }) => trace(`custom:after ${context.step}`),
            ],
            on: { BACK: 'a' },
          },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: 'b', trace: ['custom:before none', 'custom:after assigned'] } },
      { send: { type: 'BACK' } },
      { send: { type: 'NEXT' }, expect: { trace: ['custom:before assigned', 'custom:after assigned'] } },
    ],
  },
  {
    id: 'order-exec-initial-assigns',
    from: { file: EXEC, test: 'predictableExec › initial actions should receive context updated only by preceding assign actions' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'initialAssigns',
        context: { count: 0 },
        entry: [
          ({ context }) => trace(`count:${context.count}`),
          assign({ count: 1 }),
          ({ context }) => trace(`count:${context.count}`),
          assign({ count: ({ context }) => context.count + 1 }),
          ({ context }) => trace(`count:${context.count}`),
        ],
        on: { BUMP: { actions: [assign({ count: ({ context }) => context.count * 10 }), ({ context }) => trace(`count:${context.count}`)] } },
      }),
    expectStart: { trace: ['count:0', 'count:1', 'count:2'] },
    steps: [{ send: { type: 'BUMP' }, expect: { trace: ['count:20'] } }],
  },
  {
    id: 'order-exec-raised-event-action',
    from: { file: EXEC, test: 'predictableExec › should call raised transition custom actions with raised event' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'raisedAction',
        initial: 'a',
        states: {
          a: { on: { NEXT: 'b' } },
          b: {
            entry: [() => trace('entry:b:first'), raise({ type: 'RAISED' }), () => trace('entry:b:after-raise')],
            exit: () => trace('exit:b'),
            on: { RAISED: { target: 'c', actions: ({ event }) => trace(`on:${event.type}`) } },
          },
          c: { entry: () => trace('entry:c'), on: { NEXT: 'a' } },
        },
      }),
    steps: [
      {
        send: { type: 'NEXT' },
        expect: { value: 'c', trace: ['entry:b:first', 'entry:b:after-raise', 'exit:b', 'on:RAISED', 'entry:c'] },
      },
      { send: { type: 'NEXT' }, expect: { value: 'a' } },
    ],
  },
  {
    id: 'order-exec-raised-invoke-input',
    from: { file: EXEC, test: 'predictableExec › should call invoke creator with raised event' },
    machine: (trace) =>
      createMachine({
        id: 'raisedInvokeInput',
        initial: 'a',
        states: {
          a: { on: { NEXT: 'b' } },
          b: { entry: raise({ type: 'RAISED' }), on: { RAISED: 'c' } },
          c: {
            // no id: XState names it by its position in the chart
            invoke: {
              src: fromCallback<AnyEventObject, { eventType: string }>(({ input }) => {
                trace(`cb:input ${input.eventType}`);
              }),
              input: ({ event }) => ({ eventType: event.type }),
            },
            on: { BACK: 'a' },
          },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: 'c', trace: ['cb:input RAISED'] } },
      { send: { type: 'BACK' }, expect: { value: 'a' } },
    ],
  },
  {
    id: 'order-exec-intermediate-context',
    from: {
      file: EXEC,
      test: 'predictableExec › should correctly provide intermediate context value to a custom action executed in between assign actions',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'intermediateContext',
        context: { counter: 0 },
        initial: 'a',
        states: {
          a: { on: { NEXT: 'b' } },
          b: {
            entry: [assign({ counter: 1 }), ({ context }) => trace(`between:${context.counter}`), assign({ counter: 2 })],
            on: { NEXT: { target: 'a', actions: ({ context }) => trace(`leaving:${context.counter}`) } },
          },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: 'b', trace: ['between:1'] } },
      { send: { type: 'NEXT' }, expect: { value: 'a', trace: ['leaving:2'] } },
    ],
  },
  {
    id: 'order-exec-entry-context-invoke-input',
    from: { file: EXEC, test: 'predictableExec › should create invoke based on context updated by entry actions of the same state' },
    machine: (trace) =>
      setup({
        actors: {
          check: fromPromise<{ sawUpdated: boolean }, { updated: boolean }>(async ({ input }) => ({ sawUpdated: input.updated })),
        },
      }).createMachine({
        id: 'entryThenInvoke',
        context: { updated: false, sawUpdated: null as boolean | null },
        initial: 'a',
        states: {
          a: { on: { NEXT: 'b' } },
          b: {
            entry: [assign({ updated: true }), () => trace('entry:b')],
            invoke: {
              id: 'check',
              src: 'check',
              input: ({ context }) => ({ updated: context.updated as boolean }),
              onDone: {
                target: 'c',
                actions: [assign({ sawUpdated: ({ event }) => event.output.sawUpdated }), ({ event }) => trace(`done:${String(event.output.sawUpdated)}`)],
              },
              onError: 'a',
            },
          },
          c: { type: 'final' },
        },
      }),
    steps: [{ send: { type: 'NEXT' }, expect: { value: 'c', status: 'done', trace: ['entry:b', 'done:true'] } }],
  },
  {
    id: 'order-exec-entry-send-to-child',
    from: { file: EXEC, test: 'predictableExec › should deliver events sent from the entry actions to a service invoked in the same state' },
    machine: (trace) =>
      setup({ actors: { listener: listener(trace) } }).createMachine({
        id: 'entrySendToChild',
        initial: 'a',
        states: {
          a: { on: { NEXT: 'b' } },
          b: {
            entry: [() => trace('entry:b'), sendTo('myChild', { type: 'KNOCK_KNOCK' })],
            invoke: { id: 'myChild', src: 'listener' },
            on: { NEXT: 'a' },
          },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: 'b', trace: ['entry:b', 'child:start', 'child:got KNOCK_KNOCK'] } },
      { send: { type: 'NEXT' }, expect: { value: 'a' } },
    ],
  },
  {
    id: 'order-exec-exit-send-to-child',
    from: { file: EXEC, test: 'predictableExec › should deliver events sent from the exit actions to a service invoked in the same state' },
    machine: (trace) =>
      setup({ actors: { listener: listener(trace) } }).createMachine({
        id: 'exitSendToChild',
        initial: 'active',
        states: {
          active: {
            invoke: { id: 'myService', src: 'listener' },
            exit: [() => trace('exit:active'), sendTo('myService', { type: 'MY_EVENT' })],
            on: { TOGGLE: 'inactive' },
          },
          inactive: { entry: () => trace('entry:inactive'), on: { TOGGLE: 'active' } },
        },
      }),
    expectStart: { value: 'active', trace: ['child:start'] },
    steps: [
      { send: { type: 'TOGGLE' }, expect: { value: 'inactive', trace: ['exit:active', 'child:got MY_EVENT'] } },
      { send: { type: 'TOGGLE' }, expect: { value: 'active', trace: ['child:start'] } },
      { send: { type: 'TOGGLE' }, expect: { value: 'inactive', trace: ['child:got MY_EVENT'] } },
    ],
  },
  {
    id: 'order-exec-initial-child-pong',
    from: { file: EXEC, test: 'predictableExec › should be possible to send immediate events to initially invoked actors' },
    machine: (trace) =>
      setup({ actors: { ponger: listener(trace) } }).createMachine({
        id: 'initialPong',
        initial: 'waiting',
        states: {
          waiting: {
            invoke: { id: 'ponger', src: 'ponger' },
            entry: sendTo('ponger', { type: 'PING' }),
            on: { PONG: { target: 'done', actions: () => trace('got:PONG') } },
          },
          done: { type: 'final' },
        },
      }),
    expectStart: { value: 'done', status: 'done', trace: ['child:start', 'child:got PING', 'got:PONG'] },
    steps: [{ wait: 100, expect: { value: 'done', status: 'done' } }],
  },
  {
    id: 'order-exec-initial-child-machine',
    from: { file: EXEC, test: 'predictableExec › should be possible to send immediate events to initially invoked actors' },
    refused: 'stateful_child',
    machine: (trace) =>
      setup({
        actors: {
          ponger: createMachine({
            id: 'ponger',
            on: { PING: { actions: [() => trace('child:got PING'), sendParent({ type: 'PONG' })] } },
          }),
        },
      }).createMachine({
        id: 'initialPongMachine',
        initial: 'waiting',
        states: {
          waiting: {
            invoke: { id: 'ponger', src: 'ponger' },
            entry: sendTo('ponger', { type: 'PING' }),
            on: { PONG: { target: 'done', actions: () => trace('got:PONG') } },
          },
          done: { type: 'final' },
        },
      }),
    expectStart: { value: 'done', status: 'done', trace: ['child:got PING', 'got:PONG'] },
    steps: [{ wait: 100, expect: { status: 'done' } }],
  },

  // ───────────────────────────── document order ─────────────────────────────
  {
    id: 'order-document-order',
    from: { file: 'packages/core/test/order.test.ts', test: 'document order › should specify the correct document order for each state node' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'docOrder',
        initial: 'one',
        states: {
          one: {
            ...io(trace, 'one'),
            initial: 'two',
            on: { TO_SEVEN: '#docOrder.seven', TO_SIX: '.three.five' },
            states: {
              two: { ...io(trace, 'two') },
              three: {
                ...io(trace, 'three'),
                initial: 'four',
                states: {
                  four: { ...io(trace, 'four') },
                  five: { ...io(trace, 'five'), initial: 'six', states: { six: { ...io(trace, 'six') } } },
                },
              },
            },
          },
          seven: {
            ...io(trace, 'seven'),
            type: 'parallel',
            on: { TO_ONE: 'one' },
            states: {
              eight: {
                ...io(trace, 'eight'),
                initial: 'nine',
                states: {
                  nine: { ...io(trace, 'nine') },
                  ten: {
                    ...io(trace, 'ten'),
                    initial: 'eleven',
                    states: { eleven: { ...io(trace, 'eleven') }, twelve: { ...io(trace, 'twelve') } },
                  },
                },
              },
              thirteen: {
                ...io(trace, 'thirteen'),
                type: 'parallel',
                states: { fourteen: { ...io(trace, 'fourteen') }, fifteen: { ...io(trace, 'fifteen') } },
              },
            },
          },
        },
      }),
    expectStart: { value: { one: 'two' }, trace: ['entry:one', 'entry:two'] },
    steps: [
      { send: { type: 'TO_SIX' }, expect: { value: { one: { three: { five: 'six' } } }, trace: ['exit:two', 'entry:three', 'entry:five', 'entry:six'] } },
      {
        send: { type: 'TO_SEVEN' },
        expect: {
          trace: ['exit:six', 'exit:five', 'exit:three', 'exit:one', 'entry:seven', 'entry:eight', 'entry:nine', 'entry:thirteen', 'entry:fourteen', 'entry:fifteen'],
        },
      },
      {
        send: { type: 'TO_ONE' },
        expect: { value: { one: 'two' }, trace: ['exit:fifteen', 'exit:fourteen', 'exit:thirteen', 'exit:nine', 'exit:eight', 'exit:seven', 'entry:one', 'entry:two'] },
      },
    ],
  },

  // ───────────────────────────── entry/exit/transition order ─────────────────────────────
  {
    id: 'order-parallel-change',
    from: { file: ACTIONS, test: 'entry/exit actions › State.actions › should return actions for parallel machines' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'parallelChange',
        type: 'parallel',
        states: {
          a: {
            ...io(trace, 'a'),
            initial: 'a1',
            states: {
              a1: {
                ...io(trace, 'a1'),
                on: { CHANGE: { target: 'a2', actions: [() => trace('do:a2'), () => trace('do:a2-again')] } },
              },
              a2: { ...io(trace, 'a2'), on: { CHANGE: 'a1' } },
            },
          },
          b: {
            ...io(trace, 'b'),
            initial: 'b1',
            states: {
              b1: { ...io(trace, 'b1'), on: { CHANGE: { target: 'b2', actions: () => trace('do:b2') } } },
              b2: { ...io(trace, 'b2') },
            },
          },
        },
      }),
    expectStart: { value: { a: 'a1', b: 'b1' }, trace: ['entry:a', 'entry:a1', 'entry:b', 'entry:b1'] },
    steps: [
      {
        send: { type: 'CHANGE' },
        expect: { value: { a: 'a2', b: 'b2' }, trace: ['exit:b1', 'exit:a1', 'do:a2', 'do:a2-again', 'do:b2', 'entry:a2', 'entry:b2'] },
      },
      { send: { type: 'CHANGE' }, expect: { value: { a: 'a1', b: 'b2' }, trace: ['exit:a2', 'entry:a1'] } },
    ],
  },
  {
    id: 'order-nested-child-to-parent',
    from: { file: ACTIONS, test: 'entry/exit actions › State.actions › should return nested actions in the correct (child to parent) order' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'nestedOrder',
        initial: 'a',
        states: {
          a: {
            ...io(trace, 'a'),
            initial: 'a1',
            states: { a1: { ...io(trace, 'a1'), on: { SIBLING: 'a2' } }, a2: { ...io(trace, 'a2') } },
            on: { CHANGE: { target: 'b', actions: () => trace('do:change') } },
          },
          b: { ...io(trace, 'b'), initial: 'b1', states: { b1: { ...io(trace, 'b1') } }, on: { CHANGE: 'a' } },
        },
      }),
    expectStart: { trace: ['entry:a', 'entry:a1'] },
    steps: [
      // same-parent substates: the parent is neither exited nor entered
      { send: { type: 'SIBLING' }, expect: { value: { a: 'a2' }, trace: ['exit:a1', 'entry:a2'] } },
      { send: { type: 'CHANGE' }, expect: { value: { b: 'b1' }, trace: ['exit:a2', 'exit:a', 'do:change', 'entry:b', 'entry:b1'] } },
      { send: { type: 'CHANGE' }, expect: { value: { a: 'a1' }, trace: ['exit:b1', 'exit:b', 'entry:a', 'entry:a1'] } },
    ],
  },
  {
    id: 'order-exit-parallel-children',
    from: { file: ACTIONS, test: 'entry/exit actions › State.actions › should exit children of parallel state nodes' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'exitParallel',
        initial: 'B',
        states: {
          A: { ...io(trace, 'A'), on: { 'to-B': 'B' } },
          B: {
            ...io(trace, 'B'),
            type: 'parallel',
            on: { 'to-A': 'A' },
            states: {
              C: { ...io(trace, 'C'), initial: 'C1', states: { C1: { ...io(trace, 'C1') } } },
              D: { ...io(trace, 'D'), initial: 'D1', states: { D1: { ...io(trace, 'D1') } } },
            },
          },
        },
      }),
    expectStart: { trace: ['entry:B', 'entry:C', 'entry:C1', 'entry:D', 'entry:D1'] },
    steps: [
      { send: { type: 'to-A' }, expect: { value: 'A', trace: ['exit:D1', 'exit:D', 'exit:C1', 'exit:C', 'exit:B', 'entry:A'] } },
      { send: { type: 'to-B' }, expect: { value: { B: { C: 'C1', D: 'D1' } }, trace: ['exit:A', 'entry:B', 'entry:C', 'entry:C1', 'entry:D', 'entry:D1'] } },
    ],
  },
  {
    id: 'order-reenter-targeted-ancestor',
    from: { file: ACTIONS, test: "entry/exit actions › State.actions › should reenter targeted ancestor (as it's a descendant of the transition domain)" },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'reenterAncestor',
        context: { updates: 0 },
        initial: 'loaded',
        states: {
          loaded: {
            ...io(trace, 'loaded'),
            id: 'loaded',
            initial: 'idle',
            states: {
              idle: {
                ...io(trace, 'idle'),
                on: { UPDATE: { target: '#loaded', actions: assign({ updates: ({ context }) => context.updates + 1 }) }, EDIT: 'editing' },
              },
              editing: { ...io(trace, 'editing'), on: { UPDATE: '#loaded' } },
            },
          },
        },
      }),
    steps: [
      { send: { type: 'UPDATE' }, expect: { value: { loaded: 'idle' }, trace: ['exit:idle', 'exit:loaded', 'entry:loaded', 'entry:idle'] } },
      { send: { type: 'EDIT' }, expect: { value: { loaded: 'editing' } } },
      { send: { type: 'UPDATE' }, expect: { value: { loaded: 'idle' }, trace: ['exit:editing', 'exit:loaded', 'entry:loaded', 'entry:idle'] } },
    ],
  },
  {
    id: 'order-root-reenter',
    from: { file: ACTIONS, test: 'entry/exit actions › State.actions › root entry/exit actions should be called on root reentering transitions' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'rootReenter',
        ...io(trace, 'root'),
        on: { EVENT: { target: '#two', reenter: true } },
        initial: 'one',
        states: { one: { ...io(trace, 'one') }, two: { ...io(trace, 'two'), id: 'two' } },
      }),
    expectStart: { value: 'one', trace: ['entry:root', 'entry:one'] },
    steps: [
      { send: { type: 'EVENT' }, expect: { value: 'two', trace: ['exit:one', 'exit:root', 'entry:root', 'entry:two'] } },
      { send: { type: 'EVENT' }, expect: { value: 'two', trace: ['exit:two', 'exit:root', 'entry:root', 'entry:two'] } },
    ],
  },
  {
    id: 'order-self-default-deep',
    from: { file: ACTIONS, test: 'entry/exit actions › entry/exit actions › should exit deep descendant during a default self-transition' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'selfDefault',
        initial: 'a',
        states: {
          a: {
            ...io(trace, 'a'),
            on: { EV: { target: 'a', actions: () => trace('do:EV') } },
            initial: 'a1',
            states: { a1: { ...io(trace, 'a1'), initial: 'a11', states: { a11: { ...io(trace, 'a11') } } } },
          },
        },
      }),
    steps: [{ send: { type: 'EV' }, expect: { value: { a: { a1: 'a11' } }, trace: ['exit:a11', 'exit:a1', 'do:EV', 'entry:a1', 'entry:a11'] } }],
  },
  {
    id: 'order-self-reenter-deep',
    from: { file: ACTIONS, test: 'entry/exit actions › entry/exit actions › should exit deep descendant during a reentering self-transition' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'selfReenter',
        initial: 'a',
        states: {
          a: {
            ...io(trace, 'a'),
            on: { EV: { target: 'a', reenter: true, actions: () => trace('do:EV') } },
            initial: 'a1',
            states: { a1: { ...io(trace, 'a1'), initial: 'a11', states: { a11: { ...io(trace, 'a11') } } } },
          },
        },
      }),
    steps: [
      {
        send: { type: 'EV' },
        expect: { value: { a: { a1: 'a11' } }, trace: ['exit:a11', 'exit:a1', 'exit:a', 'do:EV', 'entry:a', 'entry:a1', 'entry:a11'] },
      },
    ],
  },
  {
    id: 'order-leaf-self-transitions',
    from: { file: ACTIONS, test: 'entry/exit actions › entry/exit actions › should reenter leaf state during its reentering self-transition' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'leafSelf',
        initial: 'a',
        states: {
          a: {
            ...io(trace, 'a'),
            initial: 'a1',
            states: {
              a1: {
                ...io(trace, 'a1'),
                on: {
                  STAY: { target: 'a1', actions: () => trace('do:STAY') },
                  REENTER: { target: 'a1', reenter: true, actions: () => trace('do:REENTER') },
                },
              },
            },
          },
        },
      }),
    steps: [
      // a default self-transition on a leaf runs its actions and neither exits nor enters it
      { send: { type: 'STAY' }, expect: { value: { a: 'a1' }, trace: ['do:STAY'] } },
      { send: { type: 'REENTER' }, expect: { value: { a: 'a1' }, trace: ['exit:a1', 'do:REENTER', 'entry:a1'] } },
    ],
  },
  {
    id: 'order-reenter-descendant-target',
    from: {
      file: ACTIONS,
      test: 'entry/exit actions › entry/exit actions › should enter all descendents when target is a descendent of the source when using an reentering transition',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'reenterDescendant',
        initial: 'A',
        states: {
          A: {
            ...io(trace, 'A'),
            initial: 'A1',
            on: { REENTER: { reenter: true, target: '.A2' }, PLAIN: '.A2' },
            states: {
              A1: { ...io(trace, 'A1') },
              A2: { ...io(trace, 'A2'), initial: 'A2a', states: { A2a: { ...io(trace, 'A2a') } }, on: { BACK: 'A1' } },
            },
          },
        },
      }),
    steps: [
      { send: { type: 'REENTER' }, expect: { value: { A: { A2: 'A2a' } }, trace: ['exit:A1', 'exit:A', 'entry:A', 'entry:A2', 'entry:A2a'] } },
      { send: { type: 'BACK' }, expect: { value: { A: 'A1' }, trace: ['exit:A2a', 'exit:A2', 'entry:A1'] } },
      { send: { type: 'PLAIN' }, expect: { value: { A: { A2: 'A2a' } }, trace: ['exit:A1', 'entry:A2', 'entry:A2a'] } },
    ],
  },
  {
    id: 'order-parallel-reenter-region',
    from: {
      file: ACTIONS,
      test: 'entry/exit actions › parallel states › should reenter parallel region when a parallel state gets reentered while targeting another region',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'parallelReenter',
        initial: 'ready',
        states: {
          ready: {
            ...io(trace, 'ready'),
            type: 'parallel',
            on: { CAMERA_OFF: { target: '#cameraOff', reenter: true } },
            states: {
              devicesInfo: { ...io(trace, 'devicesInfo') },
              camera: {
                ...io(trace, 'camera'),
                initial: 'on',
                states: { on: { ...io(trace, 'on') }, off: { ...io(trace, 'off'), id: 'cameraOff', on: { CAMERA_ON: 'on' } } },
              },
            },
          },
        },
      }),
    expectStart: { value: { ready: { devicesInfo: {}, camera: 'on' } } },
    steps: [
      {
        send: { type: 'CAMERA_OFF' },
        expect: {
          value: { ready: { devicesInfo: {}, camera: 'off' } },
          trace: ['exit:on', 'exit:camera', 'exit:devicesInfo', 'exit:ready', 'entry:ready', 'entry:devicesInfo', 'entry:camera', 'entry:off'],
        },
      },
      { send: { type: 'CAMERA_ON' }, expect: { value: { ready: { devicesInfo: {}, camera: 'on' } }, trace: ['exit:off', 'entry:on'] } },
    ],
  },
  {
    id: 'order-targetless-parent',
    from: { file: ACTIONS, test: "entry/exit actions › targetless transitions › shouldn't exit a state on a parent's targetless transition" },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'targetlessParent',
        ...io(trace, 'root'),
        initial: 'one',
        on: { WHATEVER: { actions: () => trace('do:WHATEVER') } },
        states: { one: { ...io(trace, 'one'), on: { NEXT: 'two' } }, two: { ...io(trace, 'two') } },
      }),
    steps: [
      { send: { type: 'WHATEVER' }, expect: { value: 'one', trace: ['do:WHATEVER'] } },
      { send: { type: 'NEXT' }, expect: { value: 'two', trace: ['exit:one', 'entry:two'] } },
      { send: { type: 'WHATEVER' }, expect: { value: 'two', trace: ['do:WHATEVER'] } },
    ],
  },
  {
    id: 'order-targetless-delayed',
    from: { file: ACTIONS, test: "entry/exit actions › targetless transitions › shouldn't exit (and reenter) state on targetless delayed transition" },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'targetlessDelayed',
        initial: 'one',
        states: {
          one: { ...io(trace, 'one'), after: { 300: { actions: () => trace('tick') } }, on: { NEXT: 'two' } },
          two: { ...io(trace, 'two') },
        },
      }),
    expectStart: { trace: ['entry:one'] },
    steps: [
      { wait: 50, expect: { value: 'one' } },
      { wait: 300, expect: { value: 'one', trace: ['tick'] } },
      { send: { type: 'NEXT' }, expect: { value: 'two', trace: ['exit:one', 'entry:two'] } },
    ],
  },
  {
    id: 'order-final-root-exit',
    from: {
      file: ACTIONS,
      test: 'entry/exit actions › when stopped › an exit action executed when an interpreter reaches its final state should be called with the last received event',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'finalRootExit',
        initial: 'a',
        states: {
          a: { ...io(trace, 'a'), on: { NEXT: 'b' } },
          b: { ...io(trace, 'b'), type: 'final' },
        },
        exit: ({ event }) => trace(`exit:root ${event.type}`),
        output: () => ({ finished: true }),
      }),
    steps: [{ send: { type: 'NEXT' }, expect: { value: 'b', status: 'done', trace: ['exit:a', 'entry:b', 'exit:b', 'exit:root NEXT'] } }],
  },
  {
    id: 'order-initial-transition-actions',
    from: { file: ACTIONS, test: 'initial actions › should support initial actions from transition' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'initialTransitionActions',
        initial: { target: 'a', actions: () => trace('initial:a') },
        states: {
          a: { ...io(trace, 'a'), on: { NEXT: 'b' } },
          b: {
            ...io(trace, 'b'),
            initial: { target: 'foo', actions: () => trace('initial:foo') },
            states: {
              foo: {
                ...io(trace, 'foo'),
                initial: { target: 'bar', actions: () => trace('initial:bar') },
                states: { bar: { ...io(trace, 'bar') } },
              },
            },
          },
        },
      }),
    expectStart: { value: 'a', trace: ['initial:a', 'entry:a'] },
    steps: [{ send: { type: 'NEXT' }, expect: { value: { b: { foo: 'bar' } }, trace: ['exit:a', 'entry:b', 'initial:foo', 'entry:foo', 'initial:bar', 'entry:bar'] } }],
  },
  {
    id: 'order-initial-actions-root-reenter',
    from: { file: ACTIONS, test: 'initial actions › should execute actions of the initial transition when taking a root reentering self-transition' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'root',
        initial: { target: 'a', actions: () => trace('initial:a') },
        states: { a: { ...io(trace, 'a'), on: { NEXT: 'b' } }, b: { ...io(trace, 'b') } },
        on: { REENTER: { target: '#root', reenter: true } },
      }),
    expectStart: { value: 'a', trace: ['initial:a', 'entry:a'] },
    steps: [
      { send: { type: 'NEXT' }, expect: { value: 'b' } },
      { send: { type: 'REENTER' }, expect: { value: 'a', trace: ['exit:b', 'initial:a', 'entry:a'] } },
    ],
  },
  {
    id: 'order-parallel-transition-doc-order',
    from: { file: ACTIONS, test: 'actions › should call transition actions in document order for states at different levels of parallel regions' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'parallelDocOrder',
        type: 'parallel',
        states: {
          a: { initial: 'a1', states: { a1: { on: { FOO: { actions: () => trace('do:a1') } } } } },
          b: { on: { FOO: { actions: () => trace('do:b') } } },
          c: { initial: 'c1', states: { c1: { initial: 'c11', states: { c11: { on: { FOO: { actions: () => trace('do:c11') } } } } } } },
        },
      }),
    steps: [
      { send: { type: 'FOO' }, expect: { trace: ['do:a1', 'do:b', 'do:c11'] } },
      { send: { type: 'FOO' }, expect: { trace: ['do:a1', 'do:b', 'do:c11'] } },
    ],
  },
  {
    id: 'order-initial-raise-context',
    from: { file: ACTIONS, test: 'actions › should call an inline action responding to an initial raise with updated (non-initial) context' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'initialRaise',
        context: { count: 0 },
        entry: [assign({ count: 42 }), raise({ type: 'HELLO' }), () => trace('entry:root')],
        on: {
          HELLO: { actions: ({ context, event }) => trace(`${event.type}:${context.count}`) },
          AGAIN: { actions: [assign({ count: ({ context }) => context.count + 1 }), raise({ type: 'HELLO' })] },
        },
      }),
    expectStart: { trace: ['entry:root', 'HELLO:42'] },
    steps: [{ send: { type: 'AGAIN' }, expect: { trace: ['HELLO:43'] } }],
  },

  // ───────────────────────────── raise and sendTo self ─────────────────────────────
  {
    id: 'order-raise-same-state',
    from: { file: ACTIONS, test: 'raise › should be able to raise an event and respond to it in the same state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'raiseSameState',
        initial: 'a',
        states: {
          a: { ...io(trace, 'a'), entry: [() => trace('entry:a'), raise({ type: 'TO_B' })], on: { TO_B: 'b' } },
          b: { ...io(trace, 'b'), on: { AGAIN: 'a' } },
        },
      }),
    expectStart: { value: 'b', trace: ['entry:a', 'exit:a', 'entry:b'] },
    steps: [{ send: { type: 'AGAIN' }, expect: { value: 'b', trace: ['exit:b', 'entry:a', 'exit:a', 'entry:b'] } }],
  },
  {
    id: 'order-raise-delayed-self',
    from: { file: ACTIONS, test: 'raise › should be able to send a delayed event to itself' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'raiseDelayed',
        initial: 'a',
        states: {
          a: { entry: raise({ type: 'EVENT' }, { delay: 400 }), on: { TO_B: 'b', EVENT: { actions: () => trace('EVENT in a') } } },
          b: { on: { EVENT: { target: 'c', actions: () => trace('EVENT in b') } } },
          c: { type: 'final' },
        },
      }),
    steps: [
      { send: { type: 'TO_B' }, expect: { value: 'b' } },
      { wait: 50, expect: { value: 'b' } },
      { wait: 600, expect: { value: 'c', status: 'done', trace: ['EVENT in b'] } },
    ],
  },
  {
    id: 'order-raise-context-expr',
    from: { file: ACTIONS, test: 'raise › should be possible to access context in the event expression' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'raiseFromContext',
        context: { next: 'GO_B' },
        initial: 'a',
        states: {
          a: {
            on: {
              NEXT: { actions: [assign({ next: ({ event }) => (event.to as string | undefined) ?? 'GO_B' }), raise(({ context }) => ({ type: context.next as string }))] },
              GO_B: { target: 'b', actions: () => trace('go:b') },
              GO_C: { target: 'c', actions: () => trace('go:c') },
            },
          },
          b: { on: { BACK: 'a' } },
          c: { on: { BACK: 'a' } },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: 'b', trace: ['go:b'] } },
      { send: { type: 'BACK' } },
      { send: ev('NEXT', { to: 'GO_C' }), expect: { value: 'c', trace: ['go:c'] } },
    ],
  },
  {
    id: 'order-send-to-self',
    from: {
      file: ACTIONS,
      test: 'sendTo › a self-event "handler" of an event sent using sendTo should be able to read updated snapshot of self',
    },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'sendToSelf',
        context: { counter: 0 },
        initial: 'a',
        states: {
          a: { on: { NEXT: 'b' } },
          b: {
            entry: [assign({ counter: 1 }), sendTo(({ self }) => self, { type: 'EVENT' }), () => trace('entry:b')],
            on: { EVENT: { target: 'c', actions: ({ self }) => trace(`EVENT sees ${String(self.getSnapshot().context.counter)}`) } },
          },
          c: { on: { NEXT: 'a' } },
        },
      }),
    steps: [
      { send: { type: 'NEXT' }, expect: { value: 'c', trace: ['entry:b', 'EVENT sees 1'] } },
      { send: { type: 'NEXT' }, expect: { value: 'a' } },
    ],
  },

  // ───────────────────────────── enqueueActions ─────────────────────────────
  {
    id: 'order-enqueue-referenced',
    from: { file: ACTIONS, test: 'enqueueActions › should execute a parameterized action' },
    machine: (trace) =>
      setup({
        actions: {
          say: (_, params: { word: string }) => trace(`say:${params.word}`),
          ping: () => trace('ping'),
        },
      }).createMachine({
        id: 'enqueueReferenced',
        entry: enqueueActions(({ enqueue }) => {
          enqueue('ping');
          enqueue({ type: 'say', params: { word: 'hello' } });
          enqueue('ping');
        }),
        on: {
          GO: {
            actions: [
              () => trace('before'),
              enqueueActions(({ enqueue, event }) => {
                enqueue({ type: 'say', params: { word: event.word as string } });
                enqueue(() => trace('inline'));
              }),
              () => trace('after'),
            ],
          },
        },
      }),
    expectStart: { trace: ['ping', 'say:hello', 'ping'] },
    steps: [{ send: ev('GO', { word: 'world' }), expect: { trace: ['before', 'say:world', 'inline', 'after'] } }],
  },
  {
    id: 'order-enqueue-guard-check',
    from: { file: ACTIONS, test: 'enqueueActions › should be able to check a parameterized guard' },
    machine: (trace) =>
      setup({
        types: { context: {} as { count: number } },
        guards: { below: ({ context }, params: { max: number }) => context.count < params.max },
        actions: { full: () => trace('full') },
      }).createMachine({
        id: 'enqueueGuard',
        context: { count: 0 },
        on: {
          ADD: {
            actions: enqueueActions(({ enqueue, check }) => {
              if (check({ type: 'below', params: { max: 2 } })) {
                enqueue.assign({ count: ({ context }) => context.count + 1 });
                enqueue(({ context }) => trace(`added:${context.count}`));
              } else {
                enqueue('full');
              }
            }),
          },
        },
      }),
    steps: [
      { send: { type: 'ADD' }, expect: { trace: ['added:1'] } },
      { send: { type: 'ADD' }, expect: { trace: ['added:2'] } },
      { send: { type: 'ADD' }, expect: { trace: ['full'] } },
    ],
  },
  {
    id: 'order-enqueue-raise',
    from: { file: ACTIONS, test: 'enqueueActions › should execute a builtin action using its bound action creator' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'enqueueRaise',
        initial: 'idle',
        states: {
          idle: {
            on: {
              FOO: {
                actions: [
                  enqueueActions(({ enqueue }) => {
                    enqueue.raise({ type: 'RAISED' });
                    enqueue(() => trace('enqueued:after-raise'));
                  }),
                  () => trace('foo:last'),
                ],
              },
              RAISED: { target: 'raised', actions: () => trace('on:RAISED') },
            },
          },
          raised: { on: { FOO: 'idle' } },
        },
      }),
    steps: [
      { send: { type: 'FOO' }, expect: { value: 'raised', trace: ['enqueued:after-raise', 'foo:last', 'on:RAISED'] } },
      { send: { type: 'FOO' }, expect: { value: 'idle' } },
    ],
  },
  {
    id: 'order-enqueue-assign-deep',
    from: { file: ACTIONS, test: 'assign action order › should deeply preserve action order' },
    machine: (trace) =>
      setup({
        types: { context: {} as { count: number } },
        actions: { capture: ({ context }) => trace(`capture:${context.count}`) },
      }).createMachine({
        id: 'deepAssignOrder',
        context: { count: 0 },
        entry: [
          'capture',
          enqueueActions(({ enqueue }) => {
            enqueue.assign({ count: ({ context }) => context.count + 1 });
            enqueue('capture');
            enqueue.assign({ count: ({ context }) => context.count + 1 });
          }),
          'capture',
        ],
        on: {
          EV: { actions: [assign({ count: ({ context }) => context.count + 1 }), 'capture'] },
        },
      }),
    expectStart: { trace: ['capture:0', 'capture:1', 'capture:2'] },
    steps: [
      { send: { type: 'EV' }, expect: { trace: ['capture:3'] } },
      { send: { type: 'EV' }, expect: { trace: ['capture:4'] } },
    ],
  },

  // ───────────────────────────── assign ─────────────────────────────
  {
    id: 'order-assign-counter',
    from: { file: ASSIGN, test: 'assign › applies the assignment to the external state' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'counter',
        context: { count: 0, foo: 'bar' },
        initial: 'counting',
        states: {
          counting: {
            ...io(trace, 'counting'),
            on: {
              INC: { target: 'counting', actions: [assign(({ context }) => ({ count: (context.count as number) + 1 })), ({ context }) => trace(`inc:${String(context.count)}`)] },
              DEC: { target: 'counting', actions: [assign({ count: ({ context }) => (context.count as number) - 1 }), ({ context }) => trace(`dec:${String(context.count)}`)] },
            },
          },
        },
      }),
    steps: [
      { send: { type: 'INC' }, expect: { trace: ['inc:1'] } },
      { send: { type: 'INC' }, expect: { trace: ['inc:2'] } },
      { send: { type: 'DEC' }, expect: { trace: ['dec:1'] } },
      { send: { type: 'DEC' } },
      { send: { type: 'DEC' }, expect: { trace: ['dec:-1'] } },
      { send: { type: 'FAKE_EVENT' }, expect: { value: 'counting' } },
    ],
  },
  {
    id: 'order-assign-mixed',
    from: { file: ASSIGN, test: 'assign › applies the assignment to multiple properties (static + prop assignment)' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'mixedAssign',
        context: { count: 0, foo: 'bar' } as { count: number; foo: string; maybe?: string },
        initial: 'counting',
        states: {
          counting: {
            on: {
              WIN_MIX: { actions: [assign({ count: () => 100, foo: 'win' }), ({ context }) => trace(`win:${context.count} ${context.foo}`)] },
              WIN_FN: { actions: assign(() => ({ count: 7, foo: 'fn' })) },
              SET_MAYBE: { actions: [assign({ maybe: 'defined' }), ({ context }) => trace(`maybe:${String(context.maybe)}`)] },
              FROM_EVENT: { actions: assign({ count: ({ event }) => event.value as number }) },
            },
          },
        },
      }),
    steps: [
      { send: { type: 'SET_MAYBE' }, expect: { trace: ['maybe:defined'] } },
      { send: { type: 'WIN_MIX' }, expect: { trace: ['win:100 win'] } },
      { send: { type: 'WIN_FN' } },
      { send: ev('FROM_EVENT', { value: 30 }) },
    ],
  },
  {
    id: 'order-assign-params',
    from: { file: ASSIGN, test: 'assign meta › should provide the action parameters to the partial assigner' },
    machine: (trace) =>
      setup({
        actions: {
          inc: assign({ count: ({ context }, params: { by: number }) => (context.count as number) + params.by }),
          report: ({ context }) => trace(`count:${String(context.count)}`),
        },
      }).createMachine({
        id: 'assignParams',
        context: { count: 1 },
        entry: [{ type: 'inc', params: { by: 10 } }, 'report'],
        on: { ADD: { actions: [{ type: 'inc', params: ({ event }) => ({ by: event.by as number }) }, 'report'] } },
      }),
    expectStart: { trace: ['count:11'] },
    steps: [
      { send: ev('ADD', { by: 5 }), expect: { trace: ['count:16'] } },
      { send: ev('ADD', { by: -20 }), expect: { trace: ['count:-4'] } },
    ],
  },

  // ───────────────────────────── input ─────────────────────────────
  {
    id: 'order-input-context',
    from: { file: INPUT, test: 'input › should create a machine with input' },
    machine: (trace) =>
      setup({ types: { input: {} as { startCount: number }, context: {} as { count: number } } }).createMachine({
        id: 'withInput',
        context: ({ input }) => ({ count: input.startCount }),
        entry: ({ context }) => trace(`entry:count ${context.count}`),
        on: { INC: { actions: [assign({ count: ({ context }) => context.count + 1 }), ({ context }) => trace(`count ${context.count}`)] } },
      }),
    input: { startCount: 42 },
    expectStart: { trace: ['entry:count 42'] },
    steps: [{ send: { type: 'INC' }, expect: { trace: ['count 43'] } }],
  },
  {
    id: 'order-input-init-event',
    from: { file: INPUT, test: 'input › initial event should have input property' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'initEventInput',
        context: { greeting: '' },
        initial: 'start',
        states: {
          start: {
            entry: [
              ({ event }) => trace(`init:${event.type} ${String((event.input as { greeting?: string } | undefined)?.greeting)}`),
              assign({ greeting: ({ event }) => (event.input as { greeting: string }).greeting }),
            ],
            on: { NEXT: { target: 'next', actions: ({ event }) => trace(`next:${event.type}`) } },
          },
          next: {},
        },
      }),
    input: { greeting: 'hello' },
    expectStart: { trace: ['init:xstate.init hello'] },
    steps: [{ send: { type: 'NEXT' }, expect: { value: 'next', trace: ['next:NEXT'] } }],
  },
  {
    id: 'order-input-defaults',
    from: { file: INPUT, test: 'input › should provide a dynamic inline input to the referenced actor' },
    machine: (trace) =>
      setup({
        types: { input: {} as { count?: number; label?: string } },
        actors: { addHundred: fromPromise<number, number>(async ({ input }) => input + 100) },
      }).createMachine({
        id: 'inputDefaults',
        context: ({ input }) => ({ count: input.count ?? 0, label: input.label ?? 'default', result: 0 }),
        initial: 'idle',
        states: {
          idle: {
            entry: ({ context }) => trace(`idle:${context.label} ${context.count}`),
            on: { RUN: 'running' },
          },
          running: {
            invoke: {
              id: 'addHundred',
              src: 'addHundred',
              input: ({ context }) => context.count,
              onDone: { target: 'idle', actions: [assign({ result: ({ event }) => event.output }), ({ event }) => trace(`result:${event.output}`)] },
              onError: 'idle',
            },
          },
        },
      }),
    input: { count: 42 },
    expectStart: { trace: ['idle:default 42'] },
    steps: [{ send: { type: 'RUN' }, expect: { value: 'idle', trace: ['result:142', 'idle:default 42'] } }],
  },
  {
    id: 'order-input-callback',
    from: { file: INPUT, test: 'input › should create a callback actor with input' },
    machine: (trace) =>
      createMachine({
        types: {} as { input: { count?: number }; context: { count: number } },
        id: 'callbackInput',
        context: ({ input }) => ({ count: input.count ?? 1 }),
        initial: 'idle',
        states: {
          idle: { on: { START: 'working' } },
          working: {
            invoke: {
              src: fromCallback<AnyEventObject, { count: number }>(({ input, receive }) => {
                trace(`cb:start ${input.count}`);
                receive((event) => trace(`cb:got ${event.type} with ${input.count}`));
              }),
              id: 'worker',
              input: ({ context }) => ({ count: context.count * 2 }),
            },
            on: { POKE: { actions: sendTo('worker', { type: 'POKE' }) }, STOP: 'idle' },
          },
        },
      }),
    input: { count: 21 },
    steps: [
      { send: { type: 'START' }, expect: { value: 'working', trace: ['cb:start 42'] } },
      { send: { type: 'POKE' }, expect: { trace: ['cb:got POKE with 42'] } },
      { send: { type: 'STOP' }, expect: { value: 'idle' } },
    ],
  },

  // ───────────────────────────── events, machine, multiple targets ─────────────────────────────
  {
    id: 'order-event-innermost',
    from: { file: 'packages/core/test/event.test.ts', test: 'nested transitions › only take the transition of the most inner matching event' },
    machine: (trace) =>
      setup({
        actions: {
          assignPassword: assign({ password: ({ event }) => event.password as string }),
        },
      }).createMachine({
        id: 'signIn',
        context: { email: '', password: '' },
        initial: 'passwordField',
        states: {
          passwordField: {
            initial: 'hidden',
            states: {
              hidden: { on: { changePassword: { actions: ['assignPassword', () => trace('inner')] } } },
              valid: {},
              invalid: {},
            },
            on: {
              changePassword: [
                { guard: ({ event }) => (event.password as string).length >= 10, target: '.invalid', actions: ['assignPassword', () => trace('outer:invalid')] },
                { target: '.valid', actions: ['assignPassword', () => trace('outer:valid')] },
              ],
              REVEAL: '.valid',
            },
          },
        },
      }),
    steps: [
      { send: ev('changePassword', { password: 'xstate123' }), expect: { value: { passwordField: 'hidden' }, trace: ['inner'] } },
      { send: { type: 'REVEAL' }, expect: { value: { passwordField: 'valid' } } },
      { send: ev('changePassword', { password: 'longer-password' }), expect: { value: { passwordField: 'invalid' }, trace: ['outer:invalid'] } },
    ],
  },
  {
    id: 'order-machine-initial-always',
    from: { file: MACHINE, test: 'machine › initial state › should follow always transition' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'initialAlways',
        initial: 'a',
        states: {
          a: { ...io(trace, 'a'), always: [{ target: 'b', actions: () => trace('always:a->b') }] },
          b: { ...io(trace, 'b'), on: { BACK: 'a' } },
        },
      }),
    expectStart: { value: 'b', trace: ['entry:a', 'exit:a', 'always:a->b', 'entry:b'] },
    steps: [{ send: { type: 'BACK' }, expect: { value: 'b', trace: ['exit:b', 'entry:a', 'exit:a', 'always:a->b', 'entry:b'] } }],
  },
  {
    id: 'order-machine-single-state',
    from: { file: MACHINE, test: 'machine › combinatorial machines › should support combinatorial machines (single-state)' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'singleState',
        context: { value: 42 },
        on: { INC: { actions: [assign({ value: ({ context }) => (context.value as number) + 1 }), ({ context }) => trace(`value:${String(context.value)}`)] } },
      }),
    expectStart: { value: {} },
    steps: [
      { send: { type: 'INC' }, expect: { value: {}, trace: ['value:43'] } },
      { send: { type: 'INC' }, expect: { trace: ['value:44'] } },
    ],
  },
  {
    id: 'order-machine-provide',
    from: { file: MACHINE, test: 'machine › machine.provide › should override an action' },
    machine: (trace) =>
      setup({
        actions: { greet: () => trace('greet:original') },
        guards: { allowed: () => false },
      })
        .createMachine({
          id: 'provided',
          entry: 'greet',
          initial: 'closed',
          states: { closed: { on: { OPEN: { guard: 'allowed', target: 'open', actions: 'greet' } } }, open: {} },
        })
        .provide({
          actions: { greet: () => trace('greet:override') },
          guards: { allowed: () => true },
        }),
    expectStart: { trace: ['greet:override'] },
    steps: [{ send: { type: 'OPEN' }, expect: { value: 'open', trace: ['greet:override'] } }],
  },
  {
    id: 'order-multiple-some-regions',
    from: { file: MULTIPLE, test: 'multiple › transitions to parallel states › should enter specific states in some regions' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'multiple',
        initial: 'simple',
        states: {
          simple: {
            ...io(trace, 'simple'),
            on: {
              DEEP_MR: { target: ['para.K.M', 'para.P.R'], actions: () => trace('do:DEEP_MR') },
              DEEP_CMR: { target: ['para.A.C', 'para.K.M', 'para.P.R'] },
              INITIAL: 'para',
            },
          },
          para: {
            ...io(trace, 'para'),
            type: 'parallel',
            on: { RESET: 'simple' },
            states: {
              A: { ...io(trace, 'A'), initial: 'B', states: { B: { ...io(trace, 'B') }, C: { ...io(trace, 'C') } } },
              K: { ...io(trace, 'K'), initial: 'L', states: { L: { ...io(trace, 'L') }, M: { ...io(trace, 'M') } } },
              P: { ...io(trace, 'P'), initial: 'Q', states: { Q: { ...io(trace, 'Q') }, R: { ...io(trace, 'R') } } },
            },
          },
        },
      }),
    steps: [
      {
        send: { type: 'DEEP_MR' },
        expect: {
          value: { para: { A: 'B', K: 'M', P: 'R' } },
          trace: ['exit:simple', 'do:DEEP_MR', 'entry:para', 'entry:A', 'entry:B', 'entry:K', 'entry:M', 'entry:P', 'entry:R'],
        },
      },
      { send: { type: 'RESET' }, expect: { value: 'simple', trace: ['exit:R', 'exit:P', 'exit:M', 'exit:K', 'exit:B', 'exit:A', 'exit:para', 'entry:simple'] } },
      { send: { type: 'DEEP_CMR' }, expect: { value: { para: { A: 'C', K: 'M', P: 'R' } }, trace: ['entry:C', 'entry:M', 'entry:R'] } },
      { send: { type: 'RESET' } },
      { send: { type: 'INITIAL' }, expect: { value: { para: { A: 'B', K: 'L', P: 'Q' } } } },
    ],
  },

  // ───────────────────────────── microsteps ─────────────────────────────
  {
    id: 'order-microstep-chain',
    from: { file: MICRO, test: 'machine.microstep() › should return an array of states from all microsteps' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'microChain',
        initial: 'start',
        states: {
          start: { ...io(trace, 'start'), on: { GO: 'a' } },
          a: { ...io(trace, 'a'), entry: [() => trace('entry:a'), raise({ type: 'NEXT' })], on: { NEXT: 'b' } },
          b: { ...io(trace, 'b'), always: 'c' },
          c: { ...io(trace, 'c'), entry: [() => trace('entry:c'), raise({ type: 'NEXT' })], on: { NEXT: 'd' } },
          d: { ...io(trace, 'd'), on: { RESTART: 'start' } },
        },
      }),
    steps: [
      {
        send: { type: 'GO' },
        expect: { value: 'd', trace: ['exit:start', 'entry:a', 'exit:a', 'entry:b', 'exit:b', 'entry:c', 'exit:c', 'entry:d'] },
      },
      { send: { type: 'RESTART' }, expect: { value: 'start' } },
      { send: { type: 'GO' }, expect: { value: 'd' } },
    ],
  },
  {
    id: 'order-microstep-queue',
    from: { file: MICRO, test: 'machine.microstep() › each state should preserve their internal queue' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'microQueue',
        initial: 'first',
        states: {
          first: {
            ...io(trace, 'first'),
            on: { TRIGGER: { target: 'second', actions: [raise({ type: 'FOO' }), raise({ type: 'BAR' }), () => trace('do:TRIGGER')] } },
          },
          second: { ...io(trace, 'second'), on: { FOO: 'third', BAR: { actions: () => trace('BAR in second') } } },
          third: { ...io(trace, 'third'), on: { BAR: 'fourth' } },
          fourth: { ...io(trace, 'fourth'), always: 'fifth' },
          fifth: { ...io(trace, 'fifth'), on: { TRIGGER: 'first' } },
        },
      }),
    steps: [
      {
        send: { type: 'TRIGGER' },
        expect: {
          value: 'fifth',
          trace: ['exit:first', 'do:TRIGGER', 'entry:second', 'exit:second', 'entry:third', 'exit:third', 'entry:fourth', 'exit:fourth', 'entry:fifth'],
        },
      },
      { send: { type: 'TRIGGER' }, expect: { value: 'first' } },
    ],
  },

  // ───────────────────────────── stateIn ─────────────────────────────
  {
    id: 'order-statein-forbid',
    from: { file: STATE_IN, test: 'transition "in" check › should work to forbid events' },
    machine: (trace) =>
      createMachine({
        id: 'light',
        initial: 'green',
        states: {
          green: { ...io(trace, 'green'), on: { TIMER: 'yellow' } },
          yellow: { ...io(trace, 'yellow'), on: { TIMER: 'red' } },
          red: {
            ...io(trace, 'red'),
            initial: 'walk',
            states: {
              walk: { ...io(trace, 'walk'), on: { TIMER: 'wait' } },
              wait: { ...io(trace, 'wait'), on: { TIMER: 'stop' } },
              stop: { ...io(trace, 'stop') },
            },
            on: { TIMER: [{ target: 'green', guard: stateIn({ red: 'stop' }) }] },
          },
        },
      }),
    steps: [
      { send: { type: 'TIMER' }, expect: { value: 'yellow' } },
      { send: { type: 'TIMER' }, expect: { value: { red: 'walk' } } },
      { send: { type: 'TIMER' }, expect: { value: { red: 'wait' }, trace: ['exit:walk', 'entry:wait'] } },
      { send: { type: 'TIMER' }, expect: { value: { red: 'stop' } } },
      { send: { type: 'TIMER' }, expect: { value: 'green', trace: ['exit:stop', 'exit:red', 'entry:green'] } },
    ],
  },
  {
    id: 'order-statein-grandparent',
    from: { file: STATE_IN, test: 'transition "in" check › matching should be relative to grandparent (match)' },
    machine: (trace) =>
      createMachine({
        id: 'grandparent',
        type: 'parallel',
        states: {
          a: { initial: 'a1', states: { a1: { on: { EVENT2: { target: 'a2', guard: stateIn({ b: 'b2' }), actions: () => trace('a:to-a2') } } }, a2: { id: 'a_a2' } } },
          b: {
            initial: 'b1',
            states: {
              b1: { on: { EVENT: { target: 'b2', guard: stateIn('#a_a2'), actions: () => trace('b:to-b2') }, ENTER_B2: 'b2' } },
              b2: {
                type: 'parallel',
                states: {
                  foo: {
                    initial: 'foo1',
                    states: { foo1: { on: { EVENT_DEEP: { target: 'foo2', guard: stateIn('#bar1'), actions: () => trace('foo:to-foo2') } } }, foo2: {} },
                  },
                  bar: { initial: 'bar2', states: { bar1: { id: 'bar1' }, bar2: { on: { TO_BAR1: 'bar1' } } } },
                },
              },
            },
          },
        },
      }),
    steps: [
      // nothing matches yet: a is not in a2, b is not in b2
      { send: { type: 'EVENT' }, expect: { value: { a: 'a1', b: 'b1' } } },
      { send: { type: 'EVENT2' }, expect: { value: { a: 'a1', b: 'b1' } } },
      { send: { type: 'ENTER_B2' }, expect: { value: { a: 'a1', b: { b2: { foo: 'foo1', bar: 'bar2' } } } } },
      { send: { type: 'EVENT_DEEP' }, expect: { value: { a: 'a1', b: { b2: { foo: 'foo1', bar: 'bar2' } } } } },
      { send: { type: 'TO_BAR1' } },
      { send: { type: 'EVENT_DEEP' }, expect: { value: { a: 'a1', b: { b2: { foo: 'foo2', bar: 'bar1' } } }, trace: ['foo:to-foo2'] } },
      { send: { type: 'EVENT2' }, expect: { value: { a: 'a2', b: { b2: { foo: 'foo2', bar: 'bar1' } } }, trace: ['a:to-a2'] } },
    ],
  },
  {
    id: 'order-statein-id-path',
    from: { file: STATE_IN, test: 'transition "in" check › should be possible to check an ID with a path' },
    machine: (trace) =>
      setup({ guards: { inB1: stateIn('#b.B1') } }).createMachine({
        id: 'idPath',
        type: 'parallel',
        states: {
          A: { initial: 'A1', states: { A1: { on: { MY_EVENT: { guard: 'inB1', actions: () => trace('A1:MY_EVENT') } } } } },
          B: { id: 'b', initial: 'B1', states: { B1: { on: { SWITCH: 'B2' } }, B2: { on: { SWITCH: 'B1' } } } },
        },
      }),
    steps: [
      { send: { type: 'MY_EVENT' }, expect: { trace: ['A1:MY_EVENT'] } },
      { send: { type: 'SWITCH' }, expect: { value: { A: 'A1', B: 'B2' } } },
      { send: { type: 'MY_EVENT' }, expect: { value: { A: 'A1', B: 'B2' } } },
      { send: { type: 'SWITCH' } },
      { send: { type: 'MY_EVENT' }, expect: { trace: ['A1:MY_EVENT'] } },
    ],
  },
];

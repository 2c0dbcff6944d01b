/**
 * The six divergences the conformance suite found when it was first run, one case (or two) each:
 * kept as a group of their own so that each defect names the case that shows it.
 */
import { assign, createMachine, fromCallback, fromPromise, sendTo, setup, type AnyActorRef } from 'xstate';
import type { ConformanceCase } from '../case.js';

const echo = (trace: (entry: string) => void) =>
  fromCallback(({ receive, sendBack }) => {
    trace('child:start');
    receive((event) => {
      trace(`child:got ${event.type}`);
      if (event.type === 'PING') sendBack({ type: 'PONG' });
      if (event.type === 'ASK') (event as unknown as { origin: AnyActorRef }).origin.send({ type: 'ANSWER' });
    });
  });

export const cases: ConformanceCase[] = [
  {
    id: 'defect-send-to-child-in-entry',
    from: { file: 'packages/core/test/invoke.test.ts', test: 'invoke › with callbacks › should be able to receive messages from the parent (entry sendTo)' },
    machine: (trace) =>
      setup({ actors: { echo: echo(trace) } }).createMachine({
        id: 'entrySend',
        context: { pongs: 0 },
        initial: 'idle',
        states: {
          idle: { on: { GO: 'talking' } },
          talking: {
            invoke: { id: 'child', src: 'echo' },
            entry: sendTo('child', { type: 'PING' }),
            on: { PONG: { actions: assign({ pongs: ({ context }) => context.pongs + 1 }) }, DONE: 'idle' },
          },
        },
      }),
    steps: [
      { send: { type: 'GO' }, expect: { value: 'talking', trace: ['child:start', 'child:got PING'] } },
      { send: { type: 'DONE' }, expect: { value: 'idle' } },
      { send: { type: 'GO' }, expect: { value: 'talking' } },
    ],
  },
  {
    id: 'defect-enter-and-leave-callback-state',
    from: { file: 'packages/core/test/invoke.test.ts', test: 'invoke › with callbacks › should not invoke an actor if it gets stopped immediately by transitioning away in immediate microstep' },
    machine: (trace) =>
      setup({ actors: { echo: echo(trace) } }).createMachine({
        id: 'passThrough',
        initial: 'idle',
        states: {
          idle: { on: { GO: 'busy' } },
          busy: { invoke: { id: 'child', src: 'echo' }, always: 'after' },
          after: { entry: () => trace('entry:after'), on: { BACK: 'idle' } },
        },
      }),
    steps: [{ send: { type: 'GO' }, expect: { value: 'after' } }, { send: { type: 'BACK' } }, { send: { type: 'GO' } }],
  },
  {
    id: 'defect-callback-start-throws',
    from: { file: 'packages/core/test/invoke.test.ts', test: 'invoke › with callbacks › should treat a callback source as an event stream (callback throws)' },
    machine: (trace) =>
      setup({
        actors: {
          broken: fromCallback(() => {
            trace('broken:start');
            throw new Error('no connection');
          }),
        },
      }).createMachine({
        id: 'throwingCallback',
        initial: 'idle',
        states: {
          idle: { on: { GO: 'connecting' } },
          connecting: { invoke: { id: 'conn', src: 'broken', onError: { target: 'offline', actions: () => trace('onError') } } },
          offline: { on: { GO: 'connecting' } },
        },
      }),
    steps: [{ send: { type: 'GO' }, expect: { value: 'offline', trace: ['broken:start', 'onError'] } }, { send: { type: 'GO' }, expect: { value: 'offline' } }],
  },
  {
    id: 'defect-promise-creator-throws',
    from: { file: 'packages/core/test/invoke.test.ts', test: 'invoke › with promises › should be invoked with a promise factory that throws synchronously' },
    machine: (trace) =>
      setup({
        actors: {
          fetchIt: fromPromise<number>(() => {
            trace('fetch:called');
            throw new Error('bad request');
          }),
        },
      }).createMachine({
        id: 'throwingPromise',
        context: { error: '' },
        initial: 'idle',
        states: {
          idle: { on: { GO: 'fetching' } },
          fetching: {
            invoke: {
              id: 'fetch',
              src: 'fetchIt',
              onDone: 'idle',
              onError: { target: 'failed', actions: assign({ error: ({ event }) => (event.error as Error).message }) },
            },
          },
          failed: { on: { GO: 'fetching' } },
        },
      }),
    steps: [{ send: { type: 'GO' }, expect: { value: 'failed' } }, { send: { type: 'GO' }, expect: { value: 'failed' } }],
  },
  {
    id: 'defect-inline-callback-restored',
    from: { file: 'packages/core/test/invoke.test.ts', test: 'invoke › with callbacks › should call onDone when resolved (inline callback, restored mid-invoke)' },
    machine: (trace) =>
      createMachine({
        id: 'inlineCallback',
        context: { pongs: 0 },
        initial: 'idle',
        states: {
          idle: { on: { GO: 'talking' } },
          talking: {
            invoke: { id: 'child', src: echo(trace) },
            on: {
              SEND: { actions: sendTo('child', { type: 'PING' }) },
              PONG: { actions: assign({ pongs: ({ context }) => context.pongs + 1 }) },
              DONE: 'idle',
            },
          },
        },
      }),
    steps: [
      { send: { type: 'GO' } },
      { send: { type: 'SEND' }, expect: { trace: ['child:got PING'] } },
      { send: { type: 'SEND' } },
      { send: { type: 'DONE' }, expect: { value: 'idle' } },
    ],
  },
  {
    id: 'defect-after-actions-only',
    from: { file: 'packages/core/test/after.test.ts', test: 'delayed transitions › should execute an after transition with actions only once' },
    machine: (trace) =>
      setup({ actions: { tick: () => trace('tick') } }).createMachine({
        id: 'tickOnce',
        initial: 'waiting',
        states: { waiting: { after: { 250: { actions: 'tick' } }, on: { NEXT: 'next' } }, next: {} },
      }),
    steps: [{ wait: 300, expect: { trace: ['tick'] } }, { wait: 300 }, { send: { type: 'NEXT' }, expect: { value: 'next' } }],
  },
  {
    id: 'defect-delayed-send-with-self',
    from: { file: 'packages/core/test/actions.test.ts', test: 'sendTo() › should be able to send an event with a reference to itself after a delay' },
    machine: (trace) =>
      setup({ actors: { echo: echo(trace) } }).createMachine({
        id: 'askLater',
        context: { answers: 0 },
        initial: 'asking',
        states: {
          asking: {
            invoke: { id: 'child', src: 'echo' },
            entry: sendTo('child', ({ self }) => ({ type: 'ASK', origin: self }), { delay: 300 }),
            on: { ANSWER: { target: 'answered', actions: assign({ answers: ({ context }) => context.answers + 1 }) } },
          },
          answered: { type: 'final' },
        },
        output: ({ context }) => ({ answers: context.answers }),
      }),
    steps: [{ wait: 50, expect: { value: 'asking' } }, { wait: 300, expect: { value: 'answered', status: 'done' } }],
  },
  {
    id: 'defect-wildcard-events',
    from: { file: 'packages/core/test/eventDescriptors.test.ts', test: 'event descriptors › should select wildcard for events that have no explicit event descriptor' },
    machine: (trace) =>
      setup({}).createMachine({
        id: 'wildcard',
        initial: 'a',
        states: {
          a: { on: { EXPLICIT: 'b', '*': { target: 'c', actions: ({ event }) => trace(`wildcard:${event.type}`) } } },
          b: { on: { 'reset.*': 'a' } },
          c: { on: { 'reset.*': 'a' } },
        },
      }),
    steps: [
      { send: { type: 'WHATEVER' }, expect: { value: 'c', trace: ['wildcard:WHATEVER'] } },
      { send: { type: 'reset.now' }, expect: { value: 'a' } },
      { send: { type: 'EXPLICIT' }, expect: { value: 'b' } },
      { send: { type: 'reset.all.of.it' }, expect: { value: 'a' } },
    ],
  },
];

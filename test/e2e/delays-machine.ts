/**
 * The machines of the delay and message crash tests. `sleeper`: on entering `running` it raises `tick` with a delay of
 * `ms` (a delayed raise, which leaving the state does not cancel) and waits `ms + 200` with an
 * `after` (which leaving the state does cancel); `cancel` leaves for `cancelled`. Every `tick`
 * counts, in any state, so a tick delivered twice shows; `afterAt` is set only by the `after`.
 */
import { assign, raise, setup } from 'xstate';
import type { MachineDefinition } from '../../src/durable/definition.js';
import { sendToAgent } from '../../src/durable/send-to-agent.js';

export interface SleeperContext {
  ms: number;
  /** When the agent's first snapshot was made: its delays were scheduled just after. */
  startedAt: number;
  ticks: number;
  tickAt: number | null;
  afterAt: number | null;
}

export const sleeperMachine = setup({
  types: { context: {} as SleeperContext, input: {} as { ms: number }, events: {} as { type: 'tick' } | { type: 'cancel' } },
  actions: {
    countTick: assign({ ticks: ({ context }) => context.ticks + 1, tickAt: ({ context }) => context.tickAt ?? Date.now() }),
  },
  delays: {
    tick: ({ context }) => context.ms,
    wait: ({ context }) => context.ms + 200,
  },
}).createMachine({
  id: 'sleeper',
  context: ({ input }) => ({ ms: input.ms, startedAt: Date.now(), ticks: 0, tickAt: null, afterAt: null }),
  initial: 'running',
  states: {
    running: {
      entry: raise({ type: 'tick' }, { delay: 'tick', id: 'tick' }),
      after: { wait: { target: 'woke', actions: assign({ afterAt: () => Date.now() }) } },
      on: { tick: { actions: 'countTick' }, cancel: 'cancelled' },
    },
    woke: { on: { tick: { actions: 'countTick' } } },
    cancelled: { on: { tick: { actions: 'countTick' } } },
  },
});

export const sleeper: MachineDefinition = { name: 'sleeper', machine: sleeperMachine };

/** `ping {to, n}` sends `{type: 'msg', n, from}` to the agent `to`, and counts what it sent. */
export const pingerMachine = setup({
  types: { context: {} as { sent: number }, events: {} as { type: 'ping'; to: string; n: number } },
}).createMachine({
  id: 'pinger',
  context: { sent: 0 },
  on: {
    ping: {
      actions: [
        sendToAgent(({ event }) => (event as { to: string }).to, ({ event, self }) => ({ type: 'msg', n: (event as { n: number }).n, from: self.id })),
        assign({ sent: ({ context }) => context.sent + 1 }),
      ],
    },
  },
});

/** Keeps every `msg` it gets, in order: a message delivered twice shows. */
export const counterMachine = setup({
  types: { context: {} as { got: string[] }, events: {} as { type: 'msg'; n: number; from: string } },
}).createMachine({
  id: 'counter',
  context: { got: [] },
  on: { msg: { actions: assign({ got: ({ context, event }) => [...context.got, `${event.from}#${event.n}`] }) } },
});

export const pinger: MachineDefinition = { name: 'pinger', machine: pingerMachine };
export const counter: MachineDefinition = { name: 'counter', machine: counterMachine };

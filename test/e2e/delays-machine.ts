/**
 * The machine of the delay crash test: on entering `running` it raises `tick` with a delay of
 * `ms` (a delayed raise, which leaving the state does not cancel) and waits `ms + 200` with an
 * `after` (which leaving the state does cancel); `cancel` leaves for `cancelled`. Every `tick`
 * counts, in any state, so a tick delivered twice shows; `afterAt` is set only by the `after`.
 */
import { assign, raise, setup } from 'xstate';
import type { MachineDefinition } from '../../src/durable/definition.js';

export interface SleeperContext {
  ms: number;
  /** When the agent's first snapshot was made: its delays were scheduled just after. */
  startedAt: number;
  ticks: number;
  tickAt: number | null;
  afterAt: number | null;
}

const countTick = assign({
  ticks: ({ context }: { context: SleeperContext }) => context.ticks + 1,
  tickAt: ({ context }: { context: SleeperContext }) => context.tickAt ?? Date.now(),
});

export const sleeperMachine = setup({
  types: { context: {} as SleeperContext, input: {} as { ms: number }, events: {} as { type: 'tick' } | { type: 'cancel' } },
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
      on: { tick: { actions: countTick }, cancel: 'cancelled' },
    },
    woke: { on: { tick: { actions: countTick } } },
    cancelled: { on: { tick: { actions: countTick } } },
  },
});

export const sleeper: MachineDefinition = { name: 'sleeper', machine: sleeperMachine };

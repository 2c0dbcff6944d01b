/**
 * Child agents: `spawnAgent(machine, { id, input })` in a machine creates a durable agent of a
 * registered machine (its own row, checkpoints, inbox and lease), in the same transaction as the
 * checkpoint of the transition that spawned it: never created for a transition that is not
 * committed, never twice (the id is the child's key: a transition run again after a crash names the
 * same child, and a spawn of an id that exists changes nothing).
 *
 * The child runs wherever the runtime puts it (on a shared store, any process may adopt it) and
 * reports to its parent through the parent's inbox, in the transaction of the child's own
 * checkpoint: `agent.done` with its final `output` when it reaches a final state, `agent.failed`
 * when it ends in error (child-events.ts). Stopping the parent stops its children.
 *
 * @example
 * entry: spawnAgent('agent', {
 *   id: ({ self }) => `${self.id}:researcher`,
 *   input: ({ context }) => ({ tasks: [context.question] }),
 * }),
 * on: { 'agent.done': { actions: 'keepOutput' } },
 */
import { emit } from 'xstate';
import type { SendArgs } from './send-to-agent.js';

/** The emitted event the runtime takes a spawn from (emit is a deferred effect: the checkpoint exists). */
export const SPAWN_EVENT = 'durable.spawnAgent';

export interface SpawnEmit {
  type: typeof SPAWN_EVENT;
  machine: string;
  id: string;
  input: unknown;
}

type Resolvable<T> = T | ((args: SendArgs) => T);

/**
 * The action. The `id` is required: it is how the parent tells its children's reports apart, and
 * how a re-run of the spawning transition finds the child it already made. Typed loosely, as
 * `sendToAgent` is, so that a machine need not declare the runtime's emitted events.
 */
export function spawnAgent(machine: Resolvable<string>, options: { id: Resolvable<string>; input?: Resolvable<unknown> }): any {
  return emit((args: SendArgs) => {
    const spawn: SpawnEmit = {
      type: SPAWN_EVENT,
      machine: resolve(machine, args),
      id: resolve(options.id, args),
      input: options.input === undefined ? {} : resolve(options.input, args),
    };
    return spawn;
  });
}

function resolve<T>(value: Resolvable<T>, args: SendArgs): T {
  return typeof value === 'function' ? (value as (args: SendArgs) => T)(args) : value;
}

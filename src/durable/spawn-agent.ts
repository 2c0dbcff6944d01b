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
import { emit, type ActionArgs, type ActionFunction, type EventObject, type MachineContext, type ParameterizedObject } from 'xstate';

/** The emitted event the runtime takes a spawn from (emit is a deferred effect: the checkpoint exists). */
export const SPAWN_EVENT = 'durable.spawnAgent';

export interface SpawnEmit {
  type: typeof SPAWN_EVENT;
  machine: string;
  id: string;
  input: unknown;
}

/** A value, or a function of the spawning transition's `{ context, event, self }` (`self.id`: the parent agent's id). */
export type SpawnResolvable<T, TContext extends MachineContext = MachineContext, TExpressionEvent extends EventObject = EventObject, TEvent extends EventObject = EventObject> =
  | T
  | ((args: ActionArgs<TContext, TExpressionEvent, TEvent>) => T);

/**
 * The action. The `id` is required: it is how the parent tells its children's reports apart, and
 * how a re-run of the spawning transition finds the child it already made.
 *
 * Typed as XState types its own `emit`: every type parameter is inferred from where the action is
 * written (a state's `entry`, a transition's `actions`, `setup({ actions })`, `enqueue(…)`), so inside
 * `setup({ types }).createMachine(…)` the functions' `context` and `event` are the machine's. The
 * emitted type `TEmitted` is inferred the same way, i.e. it is whatever the machine declares: the
 * spawn event itself is the runtime's, and a machine should not have to declare it in `emitted`
 * (the action's runtime value is XState's `emit` of a `SpawnEmit`). Written outside a machine (no
 * contextual type), the functions' arguments are `any` unless annotated: `({ context }: { context: MyContext }) => …`.
 */
export function spawnAgent<
  // The `any` defaults apply only where nothing is inferred: an action made outside any machine
  // (`const spawnWorker = spawnAgent('worker', { id: 'w' })`) stays usable in every machine, as the
  // untyped `spawnAgent` was; XState's own `emit` would be refused there for its `EventObject` events.
  TContext extends MachineContext = any,
  TExpressionEvent extends EventObject = any,
  TParams extends ParameterizedObject['params'] | undefined = any,
  TEvent extends EventObject = any,
  TEmitted extends EventObject = any,
>(
  machine: SpawnResolvable<string, NoInfer<TContext>, NoInfer<TExpressionEvent>, NoInfer<TEvent>>,
  // `NoInfer`: the types come from where the action is written only. A function whose argument is
  // annotated (`({ event }: { event: { input?: unknown } }) => …`) would otherwise be inferred from,
  // and its partial type would be everyone's.
  options: {
    id: SpawnResolvable<string, NoInfer<TContext>, NoInfer<TExpressionEvent>, NoInfer<TEvent>>;
    // Not `SpawnResolvable<unknown>`: `unknown | F` is `unknown`, which would leave the function untyped.
    input?: NonNullable<unknown> | null | ((args: ActionArgs<NoInfer<TContext>, NoInfer<TExpressionEvent>, NoInfer<TEvent>>) => unknown);
  },
): ActionFunction<TContext, TExpressionEvent, TEvent, TParams, never, never, never, never, TEmitted> {
  const spawn = emit((args: ActionArgs<TContext, TExpressionEvent, TEvent>): SpawnEmit => ({
    type: SPAWN_EVENT,
    machine: resolve(machine, args),
    id: resolve(options.id, args),
    input: options.input === undefined ? {} : resolve(options.input, args),
  }));
  // The runtime's own emitted event, not one of the machine's `emitted` types (see above).
  return spawn as unknown as ActionFunction<TContext, TExpressionEvent, TEvent, TParams, never, never, never, never, TEmitted>;
}

function resolve<T, TArgs>(value: T | ((args: TArgs) => T), args: TArgs): T {
  return typeof value === 'function' ? (value as (args: TArgs) => T)(args) : value;
}

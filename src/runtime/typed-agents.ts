// The runtime's commands and queries typed by one machine: `runtime.agentsOf(definition)`. The
// runtime's own methods take any machine's agents, so their events are `InboxEvent` and their views'
// context `unknown`; this handle narrows them to one definition's machine (its event union, its
// context, its input) and checks at run time that each agent it is given is one of that machine's.
// It only delegates: validation, idempotency, storage and waiting are the runtime's.
import type { AnyStateMachine, ContextFrom, EventFromLogic, InputFrom } from 'xstate';
import type { z } from 'zod';
import { ConflictError, InvalidInputError, truncate } from '../core/errors.js';
import type { MachineDefinition } from '../durable/definition.js';
import type { InboxEvent } from '../store/store.js';
import type { Runtime, WaitForOptions } from './runtime.js';
import type { AgentView } from './views.js';

/**
 * What `spawn` takes as `input`: what the definition's `input` schema parses (its input type) when
 * the definition's type shows one, else the input the machine declares (`setup({ types: { input } })`).
 */
export type SpawnInputOf<TDefinition extends MachineDefinition> = TDefinition extends { input: infer TSchema extends z.ZodType }
  ? z.input<TSchema>
  : InputFrom<TDefinition['machine']>;

/** The part of the runtime the handle delegates to. */
type UntypedAgents = Pick<Runtime, 'spawn' | 'send' | 'view' | 'waitFor' | 'agentOrThrow' | 'machine'>;

/**
 * The agents of one machine, typed by it. Made by `runtime.agentsOf(definition)`; every method is the
 * runtime's method of the same name (same validation, errors and guarantees), with:
 * - `send` taking only the machine's events (`EventFromLogic`), and refusing (ConflictError, nothing
 *   stored) an agent of another machine;
 * - views whose `context` is the machine's context, as it was stored (JSON: a `Date` in the context
 *   reads back as a string once the agent has been restored). An agent with no readable checkpoint
 *   yet has `context: null`, whatever its type says;
 * - `view` and `waitFor` refusing (ConflictError) an agent of another machine.
 *
 * @example
 * const counters = runtime.agentsOf(counterDefinition);
 * await counters.spawn({ id: 'c1' });
 * await counters.send('c1', { type: 'inc' });
 * const { context } = await counters.view('c1'); // context.count: number
 */
export class MachineAgents<TMachine extends AnyStateMachine, TInput = InputFrom<TMachine>> {
  /** The registered machine's name: every agent this handle touches must be one of its. */
  readonly machineName: string;

  constructor(
    private readonly runtime: UntypedAgents,
    definition: MachineDefinition<TMachine>,
  ) {
    // The types come from this definition, the behaviour from the registered one: they must be the same machine.
    const registered = runtime.machine(definition.name);
    if (registered.machine !== definition.machine) {
      throw new InvalidInputError(
        `Machine "${truncate(definition.name, 128)}" is registered with another machine than this definition's: pass agentsOf the definition (or its machine) given to createRuntime.`,
      );
    }
    this.machineName = definition.name;
  }

  /** `runtime.spawn` of this machine; the same id again returns the existing agent (ConflictError if it is another machine's). */
  async spawn(options: { id?: string; input?: TInput } = {}): Promise<{ view: AgentView<ContextFrom<TMachine>>; created: boolean }> {
    const { view, created } = await this.runtime.spawn(this.machineName, options);
    return { view: this.typed(view), created };
  }

  /** `runtime.send`, for one of this machine's events. */
  async send(agentId: string, event: EventFromLogic<TMachine>, idempotencyKey?: string): Promise<{ seq: number; duplicate: boolean }> {
    this.assertOwn(agentId, (await this.runtime.agentOrThrow(agentId)).machine);
    // A machine's event union is plain objects with a `type`: an `InboxEvent` (interfaces lack its index signature).
    return this.runtime.send(agentId, event as InboxEvent, idempotencyKey);
  }

  /** `runtime.view`, with the machine's context. */
  async view(agentId: string): Promise<AgentView<ContextFrom<TMachine>>> {
    return this.typed(await this.runtime.view(agentId));
  }

  /** `runtime.waitFor`, with the machine's context in the views the predicate and the result see. */
  async waitFor(
    agentId: string,
    predicate: (view: AgentView<ContextFrom<TMachine>>) => boolean,
    options?: WaitForOptions,
  ): Promise<AgentView<ContextFrom<TMachine>>> {
    // Checked first: a predicate written for this machine's context must not run on another's.
    this.assertOwn(agentId, (await this.runtime.agentOrThrow(agentId)).machine);
    return this.typed(await this.runtime.waitFor(agentId, (view) => predicate(this.typed(view)), options));
  }

  private typed(view: AgentView): AgentView<ContextFrom<TMachine>> {
    this.assertOwn(view.id, view.machine);
    // The runtime stored this context from this machine's snapshots (checked just above).
    return view as AgentView<ContextFrom<TMachine>>;
  }

  private assertOwn(agentId: string, machine: string): void {
    if (machine !== this.machineName) {
      throw new ConflictError(`Agent "${truncate(agentId, 128)}" runs machine "${truncate(machine, 128)}", not "${truncate(this.machineName, 128)}".`);
    }
  }
}

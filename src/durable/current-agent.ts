/**
 * How an invoked actor reaches the agent it runs for. The runtime registers each agent's actor
 * system here when it creates the actor; a chart's actors read it back from the `system` their
 * creator receives. This file holds the registry so that charts import it without the runtime.
 */

/** What an invoked actor may ask of the agent it runs for (see `currentAgent`). */
export interface DurableAgentHandle {
  readonly agentId: string;
  /** The agent that spawned this one as its child; undefined for an agent spawned by a person. */
  readonly parent: string | undefined;
  /**
   * Puts an event into the parent's inbox under `key` (once per key, whatever re-runs), resolving
   * once it is durable; an ended parent takes none (resolves all the same). For an effect that
   * reports to the parent, e.g. the reference agent's answer to a task it was spawned for.
   */
  reportToParent(event: { type: string; [key: string]: unknown }, key: string): Promise<void>;
  /** The recorded result of an effect already done under this idempotency key. */
  findEffect(idempotencyKey: string): Promise<{ result: unknown } | undefined>;
  /** Records an effect as done; committed before the checkpoint of the transition it causes. */
  recordEffect(idempotencyKey: string, seq: number, result: unknown): void;
  /**
   * Where an LLM call shows its text as it is generated (`GET /agents/:id/stream`'s `token` events):
   * `key` says which call (task `seq`, `turn` within the task). A view only: the answer is committed
   * by the checkpoint of the transition it causes, as any output. Call `end()` when the call settles.
   */
  streamTokens(key: { seq: number; turn: number }): { write(delta: string): void; end(): void };
  /**
   * Waits for room under a tool's concurrency `limit`: in this process's line for `pool.key`, then,
   * on a store many processes share, for one of the store-wide slots of `pool.name` (the same tool
   * in every process: its URL, its MCP server, its name). Resolves with what gives the room back;
   * rejects if `signal` aborts first. Absent where no runtime hosts the agent.
   */
  waitForToolCapacity?(pool: { key: unknown; name: string; tool: string }, limit: number, signal: AbortSignal): Promise<() => void>;
}

// Keyed by the actor system (one per root actor): children share their root's system.
const agents = new WeakMap<object, DurableAgentHandle>();

/**
 * The agent an invoked actor runs for, from the `system` its creator receives:
 * `fromPromise(async ({ input, system }) => { const { agentId } = currentAgent(system); ... })`.
 */
export function currentAgent(system: unknown): DurableAgentHandle {
  const agent = typeof system === 'object' && system !== null ? agents.get(system) : undefined;
  if (!agent) throw new Error('currentAgent() works only inside actors run by the durable-agents runtime.');
  return agent;
}

/** For the runtime: the agent of an actor system, if the runtime registered one. */
export function agentOfSystem<T extends DurableAgentHandle>(system: object): T | undefined {
  return agents.get(system) as T | undefined;
}

/** For the runtime: registers the agent an actor system runs for. */
export function registerAgentSystem(system: object, agent: DurableAgentHandle): void {
  agents.set(system, agent);
}

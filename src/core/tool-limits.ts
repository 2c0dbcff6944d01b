/**
 * The concurrency limits tools declare (`concurrency` on a code tool, an HTTP tool or an MCP server): at most that
 * many calls of the tool run at once in this process, for all its agents together, so a fleet of
 * agents cannot flood the API behind a tool.
 *
 * - One pool per tool: a code tool's pool is the tool itself (every definition that registers the
 *   same `tool({...})` shares it); an HTTP tool's is its URL, so agents that each declare a tool
 *   posting to the same URL share its limit, whatever they named it; an MCP server's tools share the
 *   server's pool (its config's `concurrency`). A call starts only while fewer
 *   calls of its pool than its own tool's `concurrency` run: agents that declare different limits
 *   for one URL each keep theirs (the lowest holds for everyone while its calls wait at the head).
 * - First come, first served: waiting calls start in the order they arrived; the first one waits
 *   for room under its own limit and the others wait behind it (none starves, none overtakes).
 * - Not a failure: waiting counts against no time limit and no attempt (the call's `timeoutMs`
 *   starts when it is sent); an agent that stops while its call waits takes it out of the line.
 * - Per process: on a store shared by many processes (Postgres) each process keeps its own limit,
 *   unlike the LLM gate's store-wide slots (core/shared-slots.ts). A call re-run after a crash waits
 *   in line again like any other.
 */

interface Waiter {
  agentId: string;
  limit: number;
  resolve: (release: () => void) => void;
  reject: (err: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

interface Pool {
  /** The name of the tool, for metrics (an HTTP URL's pool is named after the tool that first used it). */
  tool: string;
  running: number;
  readonly queue: Waiter[];
}

/** One tool's load now, for metrics. */
export interface ToolLoad {
  tool: string;
  /** Calls waiting for room under the tool's limit. */
  waiting: number;
  /** Calls running. */
  inFlight: number;
}

export class ToolLimits {
  /** Pools with calls running or waiting (an idle pool is dropped: a pool costs nothing while unused). */
  private readonly pools = new Map<unknown, Pool>();
  /** The agents with calls waiting, with how many (views ask for one agent: no scan). */
  private readonly waitingAgents = new Map<string, number>();

  /**
   * Resolves with the slot's release once a call of pool `key` may start under `limit` (a positive
   * integer); rejects with the signal's reason if it aborts first (the call is then out of the line).
   * The release must be called exactly once (later calls do nothing).
   */
  acquire(key: unknown, tool: string, limit: number, agentId: string, signal?: AbortSignal): Promise<() => void> {
    if (!Number.isInteger(limit) || limit < 1) return Promise.reject(new RangeError(`A tool's concurrency must be a positive integer (got ${limit}).`));
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    let pool = this.pools.get(key);
    if (!pool) {
      pool = { tool, running: 0, queue: [] };
      this.pools.set(key, pool);
    }
    const thePool = pool;
    return new Promise<() => void>((resolve, reject) => {
      const waiter: Waiter = { agentId, limit, resolve, reject, signal, onAbort: undefined };
      if (signal) {
        waiter.onAbort = () => {
          const at = thePool.queue.indexOf(waiter);
          if (at < 0) return;
          this.dequeue(thePool, at);
          reject(abortReason(signal));
          // The one that left may have held the line for those behind it.
          this.pump(key, thePool);
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      thePool.queue.push(waiter);
      this.waitingAgents.set(agentId, (this.waitingAgents.get(agentId) ?? 0) + 1);
      this.pump(key, thePool);
    });
  }

  /** Whether one of this agent's tool calls waits for room under its tool's limit. */
  isWaiting(agentId: string): boolean {
    return this.waitingAgents.has(agentId);
  }

  /** Each tool with calls waiting or running, by name (pools of one name summed). */
  loads(): ToolLoad[] {
    const byTool = new Map<string, ToolLoad>();
    for (const pool of this.pools.values()) {
      const load = byTool.get(pool.tool) ?? { tool: pool.tool, waiting: 0, inFlight: 0 };
      load.waiting += pool.queue.length;
      load.inFlight += pool.running;
      byTool.set(pool.tool, load);
    }
    return [...byTool.values()];
  }

  private dequeue(pool: Pool, at: number): Waiter {
    const [waiter] = pool.queue.splice(at, 1);
    const left = (this.waitingAgents.get(waiter!.agentId) ?? 1) - 1;
    if (left > 0) this.waitingAgents.set(waiter!.agentId, left);
    else this.waitingAgents.delete(waiter!.agentId);
    return waiter!;
  }

  /** Starts waiting calls in order while the first fits under its limit; drops the pool once idle. */
  private pump(key: unknown, pool: Pool): void {
    while (pool.queue.length > 0 && pool.running < pool.queue[0]!.limit) {
      const waiter = this.dequeue(pool, 0);
      if (waiter.signal && waiter.onAbort) waiter.signal.removeEventListener('abort', waiter.onAbort);
      pool.running++;
      let released = false;
      waiter.resolve(() => {
        if (released) return;
        released = true;
        pool.running--;
        this.pump(key, pool);
      });
    }
    if (pool.running === 0 && pool.queue.length === 0 && this.pools.get(key) === pool) this.pools.delete(key);
  }
}

/** The limits of every tool of this process (the reference agent's tools wait here). */
export const toolLimits = new ToolLimits();

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The tool call was aborted while it waited for the tool\'s concurrency limit.', 'AbortError');
}

/**
 * The concurrency limits tools declare (`concurrency` on a code tool, an HTTP tool or an MCP server): at most that
 * many calls of the tool run at once, for all agents together (in this process, and on a shared
 * store in all processes: below), so a fleet of agents cannot flood the API behind a tool.
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
 * - Store-wide on a store many processes share (Postgres): a call whose turn comes in its process's
 *   line then takes one of its pool's slots in the database (`shared`, core/shared-slots.ts), so
 *   the calls of all processes together keep within the limit; the slot is renewed while the call
 *   runs and freed when it ends (or, if its process dies, when its hold runs out). A database that
 *   cannot be asked lets the call go within this process's limit (its result's commit waits for the
 *   store anyway). A call re-run after a crash waits in line again like any other.
 */
import { takeSlot, type SharedToolSlots } from './shared-slots.js';

/** A store-wide limit's slots, and the pool's name there (the same tool in every process). */
export interface SharedToolCapacity {
  slots: SharedToolSlots;
  pool: string;
  /** The database could not be asked (the call went ahead within this process's limit). */
  onUnavailable?: (err: unknown) => void;
}

/** A store-wide slot is held this long at a time, renewed every third of it while its call runs. */
export const TOOL_SLOT_HOLD_MS = 30_000;

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
  /** Of `running`: calls whose turn came here but that wait for a store-wide slot. */
  waitingShared: number;
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
   * The release must be called exactly once (later calls do nothing). With `shared`, the call then
   * also waits for one of its pool's store-wide slots (still counted as waiting).
   */
  async acquire(key: unknown, tool: string, limit: number, agentId: string, signal?: AbortSignal, shared?: SharedToolCapacity): Promise<() => void> {
    const release = await this.acquireHere(key, tool, limit, agentId, signal);
    if (!shared) return release;
    const pool = this.pools.get(key)!;
    pool.waitingShared++;
    this.waitingAgents.set(agentId, (this.waitingAgents.get(agentId) ?? 0) + 1);
    let slot: number | undefined;
    try {
      slot = await takeSlot({ tryTake: (n, holdMs) => shared.slots.tryTake(shared.pool, n, holdMs) }, limit, TOOL_SLOT_HOLD_MS, signal);
    } catch (err) {
      if (signal?.aborted) {
        release();
        throw err;
      }
      shared.onUnavailable?.(err);
    } finally {
      pool.waitingShared--;
      this.unmarkWaiting(agentId);
    }
    if (slot === undefined) return release;
    const held = slot;
    const renewal = setInterval(() => {
      shared.slots.renew(shared.pool, held, TOOL_SLOT_HOLD_MS).catch((err: unknown) => shared.onUnavailable?.(err));
    }, TOOL_SLOT_HOLD_MS / 3);
    renewal.unref();
    let given = false;
    return () => {
      if (given) return;
      given = true;
      clearInterval(renewal);
      // Not awaited: a slot not given back frees itself when its hold runs out.
      shared.slots.give(shared.pool, held).catch((err: unknown) => shared.onUnavailable?.(err));
      release();
    };
  }

  /** The line of this process: resolves once the call's turn comes under `limit`. */
  private acquireHere(key: unknown, tool: string, limit: number, agentId: string, signal?: AbortSignal): Promise<() => void> {
    if (!Number.isInteger(limit) || limit < 1) return Promise.reject(new RangeError(`A tool's concurrency must be a positive integer (got ${limit}).`));
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    let pool = this.pools.get(key);
    if (!pool) {
      pool = { tool, running: 0, waitingShared: 0, queue: [] };
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
      load.waiting += pool.queue.length + pool.waitingShared;
      load.inFlight += pool.running - pool.waitingShared;
      byTool.set(pool.tool, load);
    }
    return [...byTool.values()];
  }

  private dequeue(pool: Pool, at: number): Waiter {
    const [waiter] = pool.queue.splice(at, 1);
    this.unmarkWaiting(waiter!.agentId);
    return waiter!;
  }

  private unmarkWaiting(agentId: string): void {
    const left = (this.waitingAgents.get(agentId) ?? 1) - 1;
    if (left > 0) this.waitingAgents.set(agentId, left);
    else this.waitingAgents.delete(agentId);
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

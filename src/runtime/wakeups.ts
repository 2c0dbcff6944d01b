/**
 * Agents not in memory whose delays come due (passivated, or left on disk at recovery, or orphaned
 * on a shared store): they are woken a little before their deadline, so that the restored agent
 * schedules its delay again and it fires on time. The store is asked every `everyMs` for the
 * deadlines of the next `horizonMs`; each gets one timer here until it fires.
 */
import type { Logger } from '../core/logger.js';
import type { Store } from '../store/store.js';

export interface WakeupOptions {
  /** How often the store is asked (default 1 s). */
  everyMs?: number;
  /** How far ahead (default 2 s: more than `everyMs`, so no deadline falls between two asks). */
  horizonMs?: number;
  /** How long before its deadline an agent is woken: its restore takes a few milliseconds (default 50 ms). */
  leadMs?: number;
}

/** Deadlines read per ask: more are read at the next one. */
const BATCH = 1_000;

export class Wakeups {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private interval: NodeJS.Timeout | undefined;
  private asking: Promise<void> | undefined;
  private readonly everyMs: number;
  private readonly horizonMs: number;
  private readonly leadMs: number;

  constructor(
    private readonly store: Pick<Store, 'dueAgents'>,
    /** True when the agent is in memory (its own timers fire there). */
    private readonly isLive: (agentId: string) => boolean,
    private readonly wake: (agentId: string) => Promise<unknown>,
    private readonly log: Logger,
    options: WakeupOptions = {},
  ) {
    this.everyMs = options.everyMs ?? 1_000;
    this.horizonMs = options.horizonMs ?? 2_000;
    this.leadMs = options.leadMs ?? 50;
  }

  start(): void {
    this.interval = setInterval(() => void this.ask(), this.everyMs);
    this.interval.unref();
    void this.ask();
  }

  async stop(): Promise<void> {
    clearInterval(this.interval);
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await this.asking;
  }

  /** Reads the deadlines due soon and sets a timer for each agent not in memory (once per agent). */
  ask(): Promise<void> {
    this.asking ??= (async () => {
      try {
        const now = Date.now();
        for (const { id, wakeAt } of await this.store.dueAgents(now + this.horizonMs, BATCH)) {
          if (this.timers.has(id) || this.isLive(id)) continue;
          const timer = setTimeout(() => {
            this.timers.delete(id);
            this.wake(id).catch((err: unknown) => this.log.warn({ agentId: id, err }, 'could not wake an agent for its delay; the next ask retries'));
          }, Math.max(0, wakeAt - this.leadMs - now));
          timer.unref();
          this.timers.set(id, timer);
        }
      } catch (err) {
        this.log.warn({ err }, 'could not read the delays that come due; the next ask retries');
      } finally {
        this.asking = undefined;
      }
    })();
    return this.asking;
  }
}

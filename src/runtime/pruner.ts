/**
 * Retention, in the background: every `everyMs` the pruner looks at the next `agentsPerRun` agents
 * (in creation order, wrapping around) and prunes what their policy no longer keeps, one agent per
 * store transaction, then deletes up to `agentsPerRun` agents that ended before `keepFinishedDays`.
 * Nothing is pruned unless a policy says so: by default everything is kept.
 */
import type { Logger } from '../core/logger.js';
import type { MachineRetention } from '../durable/definition.js';
import type { AgentRows, Pruning, RetentionRule, Store } from '../store/store.js';

/** `keepCheckpoints`, `keepDays`: as `MachineRetention`, for every machine that sets neither. */
export interface RetentionPolicy extends MachineRetention {
  /** Delete agents that ended (done or stopped) more than D days ago, with everything of theirs. */
  keepFinishedDays?: number;
  /** How often the pruner runs (default 10 s). */
  everyMs?: number;
  /** How many agents one run looks at (default 100): each is its own short transaction. */
  agentsPerRun?: number;
}

export interface PruneTotals {
  checkpoints: number;
  actions: number;
  events: number;
  parts: number;
  agents: number;
}

const DAY_MS = 86_400_000;
/**
 * Parts of an agent are collected only once it has written nothing for this long: a write handed
 * to the store just before the agent left memory (it may refer to parts it counts on) has long
 * committed by then.
 */
const QUIET_MS = 60_000;

export class Pruner {
  private timer: NodeJS.Timeout | undefined;
  private cursor: string | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly store: Pick<Store, 'kind'> & Pruning & Pick<AgentRows, 'listAgents'>,
    private readonly policy: RetentionPolicy,
    /** The policy of an agent's machine, where it has its own. */
    private readonly machinePolicy: (machine: string) => MachineRetention | undefined,
    /** Whether the agent is in this process's memory (its encoder may count on parts being stored). */
    private readonly inMemory: (agentId: string) => boolean,
    private readonly log: Logger,
    private readonly onPruned: (totals: PruneTotals) => void,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.runOnce(), this.policy.everyMs ?? 10_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One run (the timer's, or a test's); runs never overlap. */
  runOnce(now = Date.now()): Promise<void> {
    this.running ??= this.run(now)
      .catch((err: unknown) => this.log.warn({ err }, 'pruning failed; the next run tries again'))
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async run(now: number): Promise<void> {
    const totals: PruneTotals = { checkpoints: 0, actions: 0, events: 0, parts: 0, agents: 0 };
    const limit = this.policy.agentsPerRun ?? 100;
    const page = await this.store.listAgents({ limit, ...(this.cursor ? { cursor: this.cursor } : {}) });
    this.cursor = page.nextCursor ?? undefined;
    for (const agent of page.items) {
      const policy = { ...this.policy, ...this.machinePolicy(agent.machine) };
      const rule: RetentionRule = {
        ...(policy.keepCheckpoints !== undefined ? { keepNewest: policy.keepCheckpoints } : {}),
        ...(policy.keepDays !== undefined ? { keepSince: new Date(now - policy.keepDays * DAY_MS).toISOString() } : {}),
      };
      if (!mayPrune(agent, rule)) continue;
      // Parts only where no encoder can count on them, decided in the same turn the store prunes
      // (SQLite prunes synchronously): a quiet agent out of memory; on a shared store, only agents
      // that ended (an active one may be running in another process).
      const quiet = agent.updatedAt < new Date(now - QUIET_MS).toISOString();
      const parts = quiet && !this.inMemory(agent.id) && (this.store.kind !== 'postgres' || agent.status !== 'active');
      const pruned = await this.store.pruneHistory(agent.id, rule, { parts });
      totals.checkpoints += pruned.checkpoints;
      totals.actions += pruned.actions;
      totals.events += pruned.events;
      totals.parts += pruned.parts;
    }
    if (this.policy.keepFinishedDays !== undefined) {
      const endedBefore = new Date(now - this.policy.keepFinishedDays * DAY_MS).toISOString();
      totals.agents = (await this.store.deleteEndedAgents({ endedBefore, limit })).length;
    }
    if (totals.checkpoints + totals.actions + totals.events + totals.parts + totals.agents > 0) {
      this.log.debug(totals, 'pruned');
      this.onPruned(totals);
    }
  }
}

/** Whether `rule` can prune anything of this agent, from its row alone (most runs find nothing: no transaction then). */
function mayPrune(agent: { lastSeq: number; prunedBefore: number; createdAt: string }, rule: RetentionRule): boolean {
  if (rule.keepNewest === undefined && rule.keepSince === undefined) return false;
  const stored = agent.lastSeq - Math.max(agent.prunedBefore, 1) + 1;
  const byCount = rule.keepNewest === undefined || stored > rule.keepNewest;
  const byTime = rule.keepSince === undefined || agent.createdAt < rule.keepSince;
  // A checkpoint is pruned only when every set rule lets it go.
  return stored > 1 && byCount && byTime;
}

import type { Logger } from '../core/logger.js';
import type { Leases, RestorableAgent } from '../store/store.js';

/** How many orphans one claim takes: recovery restores them a page at a time. */
const CLAIM_PAGE = 500;

/** What the runtime does for the keeper. */
export interface LeaseHooks {
  /** Restores agents this process has just claimed. */
  adopt(agents: readonly RestorableAgent[]): Promise<void>;
  /** An event landed in this agent's inbox (committed by any process); `owner`: who held the agent then. */
  inboxEvent(agentId: string, seq: number, owner: string | null): void;
  /** The agent's status was changed by some process (stopped, or an error where it ran). */
  statusChanged(agentId: string): void;
  /** Some process committed checkpoints of this agent, the newest being `seq`. */
  checkpointCommitted(agentId: string, seq: number): void;
  /** This process's lease ran out: other processes may be taking its agents, so it stops running them all. */
  leaseLost(): void;
  readonly log: Logger;
}

/**
 * Keeps this process's lease on a shared store (Postgres) and, with it, its share of the agents: it
 * renews the lease, takes over the agents of processes whose lease ran out (at start, that is
 * recovery), and hands the changes other processes commit to the runtime. Ticks four times per lease, so a dead
 * process's agents run again within about 1¼ leases.
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  /** Epoch ms until which the lease is known to hold (from the start of the last successful renew). */
  private validUntil = 0;
  private stopped = false;

  constructor(
    private readonly leases: Leases,
    private readonly hooks: LeaseHooks,
    private readonly options: { skipResting: boolean },
  ) {}

  /** Takes the lease (a failure here fails the start), listens for inbox events, adopts every orphan. */
  async start(): Promise<number> {
    await this.renew();
    this.leases.onChange((change) => {
      if (change.kind === 'event') this.hooks.inboxEvent(change.agentId, change.seq, change.owner);
      else if (change.kind === 'status') this.hooks.statusChanged(change.agentId);
      else this.hooks.checkpointCommitted(change.agentId, change.seq);
    });
    const adopted = await this.adoptOrphans();
    this.schedule();
    return adopted;
  }

  /** Stops ticking (waits for a tick in flight). The lease itself ends with `resign`. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
  }

  /** Ends the lease now, once this process has committed its last writes: its agents can be taken at once. */
  resign(): Promise<void> {
    return this.leases.resign();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => {
        this.ticking = undefined;
        this.schedule();
      });
    }, Math.max(25, Math.floor(this.leases.leaseMs / 4)));
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    try {
      await this.renew();
    } catch (err) {
      this.hooks.log.warn({ err }, 'could not renew the lease');
      // Unreachable database: once the lease may have run out, others may run these agents (once:
      // after that there is nothing left to stop until a renewal succeeds).
      if (this.validUntil > 0 && Date.now() > this.validUntil) this.lose();
      return;
    }
    try {
      await this.adoptOrphans();
      // The safety net for a notification missed while the listening connection was down.
      for (const { agentId, eventSeq } of await this.leases.pendingInboxes()) this.hooks.inboxEvent(agentId, eventSeq, this.leases.processId);
    } catch (err) {
      this.hooks.log.warn({ err }, 'could not take over orphaned agents; will retry');
    }
  }

  private async renew(): Promise<void> {
    const started = Date.now();
    if (await this.withinHalfALease(this.leases.renew())) {
      this.validUntil = started + this.leases.leaseMs;
      return;
    }
    // Already given up if the database was unreachable for longer than the lease.
    if (this.validUntil > 0) this.lose();
    // A fresh lease: the agents just given up are orphans now, to be claimed like any other.
    if (!(await this.leases.renew())) throw new Error('could not take a fresh lease');
    this.validUntil = started + this.leases.leaseMs;
  }

  /**
   * A renewal that has not settled within half a lease counts as failed: waiting on a connection
   * that hangs would let the lease run out unnoticed while this process goes on running its agents.
   */
  private withinHalfALease<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the lease renewal took longer than half a lease')), this.leases.leaseMs / 2);
    });
    return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
  }

  private lose(): void {
    this.hooks.log.error({ processId: this.leases.processId }, 'lease ran out; stopping every agent this process ran');
    this.validUntil = 0;
    this.hooks.leaseLost();
  }

  private async adoptOrphans(): Promise<number> {
    let adopted = 0;
    for (;;) {
      const page = await this.leases.claimOrphans({ limit: CLAIM_PAGE, skipResting: this.options.skipResting });
      if (page.length > 0) await this.hooks.adopt(page);
      adopted += page.length;
      if (page.length < CLAIM_PAGE || this.stopped) return adopted;
    }
  }
}

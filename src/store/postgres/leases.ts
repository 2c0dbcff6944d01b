/**
 * Who runs which agent when many processes share one database (see `Ownership`). A process's lease
 * is a `processes` row; it owns the agents whose `owner` is its id. Lease times are the database's
 * clock (`now()`), so the processes' clocks never have to agree. Changes are heard through
 * LISTEN/NOTIFY (`InboxListener`): the commits send them (`apply-writes.ts`).
 */
import type pg from 'pg';
import type { AgentChange, Ownership, Relay, RestorableAgent } from '../store.js';
import { relayPayload, type InboxListener } from './inbox-listener.js';
import { toRestorables, type RestorableRow, type StoredReader } from '../rows.js';
import { RESTORABLE, WORKING } from '../sql/restorable.js';

/**
 * An agent no live process holds: no owner, or an owner without a lease or whose lease ran out.
 * A subquery on the owner, not a join: when the row changes while a statement waits to lock it,
 * Postgres re-checks the condition on the new row, and re-runs a subquery with the new owner but
 * keeps a joined row as it was (two processes would both claim an agent the first just took).
 */
export const NOT_HELD = `(a.owner is null or not exists (select 1 from processes p where p.id = a.owner and p.lease_until >= now()))`;

/** Ends a process's lease and frees its agents, in one statement. */
const RESIGN = `
  with ended as (delete from processes where id = $1)
  update agents set owner = null where owner = $1`;

export class PostgresLeases implements Ownership {
  constructor(
    private readonly pool: pg.Pool,
    private readonly listener: InboxListener,
    readonly processId: string,
    readonly leaseMs: number,
    private readonly reader: StoredReader,
  ) {}

  async renew(): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `insert into processes (id, lease_until) values ($1, now() + $2::double precision * interval '1 millisecond')
       on conflict (id) do update set lease_until = excluded.lease_until where processes.lease_until >= now()
       returning id`,
      [this.processId, this.leaseMs],
    );
    if (rowCount === 1) return true;
    // It ran out: others may be claiming its agents already. Let go of the rest too, and start afresh
    // at the next renew (the row is gone, so that one inserts a new lease).
    await this.pool.query(RESIGN, [this.processId]);
    return false;
  }

  /**
   * `for update skip locked`: rows another process is claiming at this moment are skipped, not
   * waited for, and each row is claimed by one statement only.
   */
  async claimOrphans(options: { limit: number; skipResting?: boolean }): Promise<RestorableAgent[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      `with orphans as (
         select a.id from agents a
         where a.status = 'active' and ${NOT_HELD} ${options.skipResting ? `and ${WORKING}` : ''}
         order by a.pos
         limit $2
         for update of a skip locked
       )
       update agents a set owner = $1 from orphans where a.id = orphans.id
       returning a.id`,
      [this.processId, options.limit],
    );
    return this.restorable(rows.map((r) => r.id));
  }

  async claim(agentId: string): Promise<RestorableAgent | 'elsewhere' | undefined> {
    const { rowCount } = await this.pool.query(
      `update agents a set owner = $2
       where a.id = $1 and a.status = 'active' and (a.owner = $2 or ${NOT_HELD})`,
      [agentId, this.processId],
    );
    if (rowCount === 0) {
      const { rowCount: active } = await this.pool.query(`select 1 from agents where id = $1 and status = 'active'`, [agentId]);
      return active === 0 ? undefined : 'elsewhere';
    }
    const [agent] = await this.restorable([agentId]);
    return agent;
  }

  async pendingInboxes(): Promise<{ agentId: string; eventSeq: number }[]> {
    const { rows } = await this.pool.query<{ id: string; event_seq: number }>(
      `select id, event_seq from agents where owner = $1 and status = 'active' and event_seq > inbox_position order by pos`,
      [this.processId],
    );
    return rows.map((r) => ({ agentId: r.id, eventSeq: r.event_seq }));
  }

  onChange(listener: (change: AgentChange) => void): void {
    this.listener.add(listener);
  }

  /** NOTIFY on the store's channel, outside any transaction: heard at once by every process listening (this one too). */
  readonly relay: Relay = {
    send: async (message) => {
      await this.pool.query('select pg_notify($1, $2)', [this.listener.channel, relayPayload(message)]);
    },
    onMessage: (listener) => this.listener.addRelay(listener),
  };

  async resign(): Promise<void> {
    await this.pool.query(RESIGN, [this.processId]);
  }

  /**
   * Read in a statement after the claim, not within it: a statement reads the database as it was
   * when it began, and the previous owner may have committed a checkpoint between that moment and
   * the claim's row lock. Once claimed, no other process can write one.
   */
  private async restorable(ids: string[]): Promise<RestorableAgent[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.pool.query<RestorableRow>(
      `${RESTORABLE} where a.id = any($1::text[]) and a.status = 'active' order by a.pos`,
      [ids],
    );
    return toRestorables(rows, this.reader);
  }
}

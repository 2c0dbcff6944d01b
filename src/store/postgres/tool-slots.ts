/**
 * The store-wide slots of the tools' concurrency limits on Postgres (see core/shared-slots.ts): as
 * the LLM's slots (llm-slots.ts), one row per slot, but a set of rows per pool. A slot is held for
 * a while and renewed while its call runs (tool calls have no deadline the runtime knows of), so a
 * process killed mid-call frees its slots once their hold runs out.
 */
import type pg from 'pg';
import type { SharedToolSlots } from '../../core/shared-slots.js';

// Also counts the pool's rows (in the same round trip): none free and fewer rows than the limit
// means the rows are gone (below), not that every slot is held.
const TAKE = `
  with taken as (
    update tool_slots set holder = $1, held_until = now() + $4::double precision * interval '1 millisecond'
    where pool = $2 and slot = (
      select slot from tool_slots
      where pool = $2 and slot < $3 and (holder is null or held_until < now())
      order by slot
      limit 1
      for update skip locked
    )
    returning slot
  )
  select (select slot from taken) as slot, (select count(*)::int from tool_slots where pool = $2 and slot < $3) as rows`;

export class PostgresToolSlots implements SharedToolSlots {
  /** The slots known to exist, by pool: rows are added when a call asks for a higher limit than before. */
  private readonly rows = new Map<string, number>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly processId: string,
  ) {}

  async tryTake(pool: string, limit: number, holdMs: number): Promise<number | undefined> {
    if (limit > (this.rows.get(pool) ?? 0)) await this.addRows(pool, limit);
    const take = async () => (await this.pool.query<{ slot: number | null; rows: number }>(TAKE, [this.processId, pool, limit, holdMs])).rows[0]!;
    let taken = await take();
    // The table is unlogged: a database that crashed (or a promoted standby) has none of its rows.
    if (taken.slot === null && taken.rows < limit) {
      await this.addRows(pool, limit);
      taken = await take();
    }
    return taken.slot ?? undefined;
  }

  private async addRows(pool: string, limit: number): Promise<void> {
    await this.pool.query('insert into tool_slots (pool, slot) select $1, generate_series(0, $2::int - 1) on conflict do nothing', [pool, limit]);
    this.rows.set(pool, limit);
  }

  async renew(pool: string, slot: number, holdMs: number): Promise<void> {
    await this.pool.query(
      `update tool_slots set held_until = now() + $4::double precision * interval '1 millisecond' where pool = $1 and slot = $2 and holder = $3`,
      [pool, slot, this.processId, holdMs],
    );
  }

  async give(pool: string, slot: number): Promise<void> {
    await this.pool.query('update tool_slots set holder = null, held_until = null where pool = $1 and slot = $2 and holder = $3', [pool, slot, this.processId]);
  }
}

/**
 * The store-wide slots of the tools' concurrency limits on Postgres (see core/shared-slots.ts): as
 * the LLM's slots (llm-slots.ts), one row per slot, but a set of rows per pool. A slot is held for
 * a while and renewed while its call runs (tool calls have no deadline the runtime knows of), so a
 * process killed mid-call frees its slots once their hold runs out.
 */
import type pg from 'pg';
import type { SharedToolSlots } from '../../core/shared-slots.js';
import { SlotTable } from './slot-table.js';

const TAKE = `
  with taken as (
    update tool_slots set holder = $1, held_until = now() + $3::double precision * interval '1 millisecond'
    where pool = $4 and slot = (
      select slot from tool_slots
      where pool = $4 and slot < $2 and (holder is null or held_until < now())
      order by slot
      limit 1
      for update skip locked
    )
    returning slot
  )
  select (select slot from taken) as slot, (select count(*)::int from tool_slots where pool = $4 and slot < $2) as rows`;

const ADD_ROWS = 'insert into tool_slots (pool, slot) select $2, generate_series(0, $1::int - 1) on conflict do nothing';

export class PostgresToolSlots implements SharedToolSlots {
  private readonly table: SlotTable;

  constructor(
    private readonly pool: pg.Pool,
    private readonly processId: string,
  ) {
    this.table = new SlotTable(pool, processId, { take: TAKE, addRows: ADD_ROWS });
  }

  tryTake(pool: string, limit: number, holdMs: number): Promise<number | undefined> {
    return this.table.tryTake(limit, holdMs, pool);
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

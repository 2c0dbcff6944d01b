/**
 * The store-wide LLM slots on Postgres (see core/shared-slots.ts): one row per slot, held by a
 * process until it gives it back or until `held_until` (the database's clock) passes, so a process
 * killed mid-call frees its slots within the hold. `for update skip locked`: two processes taking
 * at once take different rows, and neither waits for the other. Two round trips per call (take,
 * give), each a single-row update on an unlogged table (no WAL flush to wait for: the slots are
 * worth nothing after a crash): 272–339 µs a call on a local database against 59 µs for a bare round
 * trip (675 µs while the table was logged; bench postgres, 2026-12-05), against the hundreds of ms
 * an LLM call takes.
 */
import type pg from 'pg';
import type { SharedLlmSlots } from '../../core/shared-slots.js';
import { SlotTable } from './slot-table.js';

const TAKE = `
  with taken as (
    update llm_slots set holder = $1, held_until = now() + $3::double precision * interval '1 millisecond'
    where slot = (
      select slot from llm_slots
      where slot < $2 and (holder is null or held_until < now())
      order by slot
      limit 1
      for update skip locked
    )
    returning slot
  )
  select (select slot from taken) as slot, (select count(*)::int from llm_slots where slot < $2) as rows`;

const ADD_ROWS = 'insert into llm_slots (slot) select generate_series(0, $1::int - 1) on conflict do nothing';

export class PostgresLlmSlots implements SharedLlmSlots {
  private readonly table: SlotTable;

  constructor(
    private readonly pool: pg.Pool,
    private readonly processId: string,
  ) {
    this.table = new SlotTable(pool, processId, { take: TAKE, addRows: ADD_ROWS });
  }

  tryTake(limit: number, holdMs: number): Promise<number | undefined> {
    return this.table.tryTake(limit, holdMs);
  }

  async give(slot: number): Promise<void> {
    await this.pool.query('update llm_slots set holder = null, held_until = null where slot = $1 and holder = $2', [slot, this.processId]);
  }
}

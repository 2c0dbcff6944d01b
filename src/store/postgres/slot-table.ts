/**
 * What the LLM's slots (llm-slots.ts) and the tools' (tool-slots.ts) share: taking a free row of an
 * unlogged slot table, and putting its rows back when they are gone. Each table keeps its own SQL
 * (one has pools, the other not); this holds the logic around it once.
 */
import type pg from 'pg';

export interface SlotTableSql {
  /**
   * Takes a free slot among the first $2 for holder $1, held $3 ms ($4: the pool, where the table
   * has pools), and also counts those slots' rows in the same round trip: none free and fewer rows
   * than the limit means the rows are gone, not that every slot is held. Answers `{ slot, rows }`.
   */
  take: string;
  /** Adds slots 0..$1-1 where missing ($2: the pool, where the table has pools). */
  addRows: string;
}

export class SlotTable {
  /** The slots known to exist, by pool ('' for a table without pools): added when a call asks for a higher limit than before. */
  private readonly rows = new Map<string, number>();

  constructor(
    private readonly db: pg.Pool,
    private readonly holder: string,
    private readonly sql: SlotTableSql,
  ) {}

  async tryTake(limit: number, holdMs: number, pool?: string): Promise<number | undefined> {
    const poolParams = pool === undefined ? [] : [pool];
    if (limit > (this.rows.get(pool ?? '') ?? 0)) await this.addRows(limit, pool);
    const take = async () => (await this.db.query<{ slot: number | null; rows: number }>(this.sql.take, [this.holder, limit, holdMs, ...poolParams])).rows[0]!;
    let taken = await take();
    // The table is unlogged: a database that crashed (or a promoted standby) has none of its rows.
    if (taken.slot === null && taken.rows < limit) {
      await this.addRows(limit, pool);
      taken = await take();
    }
    return taken.slot ?? undefined;
  }

  private async addRows(limit: number, pool: string | undefined): Promise<void> {
    await this.db.query(this.sql.addRows, pool === undefined ? [limit] : [limit, pool]);
    this.rows.set(pool ?? '', limit);
  }
}

/**
 * Retention on SQLite: each agent pruned in one short transaction (the write lock is held for one
 * agent's rows, never for a sweep). The pages it frees go to SQLite's free list and are reused by
 * the next writes, so the file stops growing instead of shrinking. Not `auto_vacuum`: its pointer
 * map pages are written with every commit (~70 bytes more per checkpoint of the agent loop), a price
 * every write would pay for the rare prune.
 */
import type Database from 'better-sqlite3';
import { AGENT_TABLES, oldestKept } from '../retention.js';
import { referencedClosure } from '../snapshot-parts.js';
import type { PruneResult, RetentionRule } from '../store.js';

/** Inbox events the agent consumed before its oldest kept checkpoint was written. */
const CONSUMED_BEFORE_KEPT = `seq <= (select inbox_position from agents where id = @agentId)
  and created_at < (select created_at from checkpoints where agent_id = @agentId and seq = @kept)`;
const NOTHING: PruneResult = { checkpoints: 0, actions: 0, events: 0, parts: 0, prunedBefore: 0 };

export class SqlitePruning {
  private readonly sql;
  private readonly prune: (agentId: string, rule: RetentionRule, parts: boolean) => PruneResult;
  private readonly deleteEnded: (endedBefore: string, limit: number) => string[];

  constructor(db: Database.Database) {
    const q = (text: string) => db.prepare(text);
    this.sql = {
      agent: q('select last_seq as lastSeq, pruned_before as prunedBefore from agents where id = ?'),
      firstSince: q('select seq from checkpoints where agent_id = ? and created_at >= ? order by seq limit 1').pluck(),
      baseOf: q('select base_seq from checkpoints where agent_id = ? and seq = ? and encoded = 2').pluck(),
      deleteCheckpoints: q('delete from checkpoints where agent_id = ? and seq < ?'),
      deleteActions: q('delete from actions where agent_id = ? and seq < ?'),
      // An event sent under an idempotency key keeps its row, its body cut to its type: the same key
      // must still answer the same seq, however late it is sent again.
      deleteEvents: q(
        `delete from events where agent_id = @agentId and idempotency_key is null and ${CONSUMED_BEFORE_KEPT}`,
      ),
      trimKeyedEvents: q(
        `update events set body = json_object('type', type)
         where agent_id = @agentId and idempotency_key is not null and body <> json_object('type', type) and ${CONSUMED_BEFORE_KEPT}`,
      ),
      setPruned: q('update agents set pruned_before = ? where id = ?'),
      keptTexts: q(
        `select snapshot from checkpoints where agent_id = ? and encoded > 0
         union all select payload from actions where agent_id = ? and encoded <> 0 and payload is not null
         union all select result from actions where agent_id = ? and encoded <> 0 and result is not null
         union all select result from effects where agent_id = ? and encoded <> 0 and result is not null`,
      ).pluck(),
      parts: q('select hash, body from snapshot_parts where agent_id = ? and hash in (select value from json_each(?))').raw(),
      deleteParts: q('delete from snapshot_parts where agent_id = ? and seq < ? and hash not in (select value from json_each(?))'),
      ended: q(`select id from agents where status in ('done', 'stopped') and updated_at < ? order by updated_at limit ?`).pluck(),
      pageCount: q('pragma page_count').pluck(),
      freePages: q('pragma freelist_count').pluck(),
      pageSize: q('pragma page_size').pluck(),
    };
    const deleteAgent = AGENT_TABLES.map((table) =>
      q(`delete from ${table} where agent_id = ?`),
    );
    const deleteRow = q('delete from agents where id = ?');

    this.prune = db.transaction((agentId: string, rule: RetentionRule, parts: boolean): PruneResult => {
      const agent = this.sql.agent.get(agentId) as { lastSeq: number; prunedBefore: number } | undefined;
      if (!agent) return NOTHING;
      const firstSince = rule.keepSince === undefined ? undefined : (this.sql.firstSince.get(agentId, rule.keepSince) as number | null) ?? undefined;
      let kept = oldestKept(agent.lastSeq, rule, firstSince);
      if (kept === undefined) return { ...NOTHING, prunedBefore: agent.prunedBefore };
      // A kept delta needs its chain from the whole checkpoint it starts at.
      kept = (this.sql.baseOf.get(agentId, kept) as number | undefined) ?? kept;
      if (kept <= agent.prunedBefore) return { ...NOTHING, prunedBefore: agent.prunedBefore };
      const result = {
        events: this.sql.deleteEvents.run({ agentId, kept }).changes + this.sql.trimKeyedEvents.run({ agentId, kept }).changes,
        checkpoints: this.sql.deleteCheckpoints.run(agentId, kept).changes,
        actions: this.sql.deleteActions.run(agentId, kept).changes,
        parts: 0,
        prunedBefore: kept,
      };
      this.sql.setPruned.run(kept, agentId);
      if (parts) {
        const texts = this.sql.keptTexts.all(agentId, agentId, agentId, agentId) as string[];
        const live = referencedClosure(texts, (hashes) => new Map(this.sql.parts.all(agentId, JSON.stringify(hashes)) as [string, string][]));
        // Only parts first written before the oldest kept checkpoint: a newer one may belong to a write on its way.
        result.parts = this.sql.deleteParts.run(agentId, kept, JSON.stringify([...live])).changes;
      }
      return result;
    }).immediate as never;

    this.deleteEnded = db.transaction((endedBefore: string, limit: number): string[] => {
      const ids = this.sql.ended.all(endedBefore, limit) as string[];
      for (const id of ids) {
        for (const statement of deleteAgent) statement.run(id);
        deleteRow.run(id);
      }
      return ids;
    }).immediate as never;
  }

  pruneHistory(agentId: string, rule: RetentionRule, options: { parts: boolean }): PruneResult {
    return this.prune(agentId, rule, options.parts);
  }

  deleteEndedAgents(endedBefore: string, limit: number): string[] {
    return this.deleteEnded(endedBefore, limit);
  }

  /** Pages in use: the file's pages less those free for reuse. */
  sizeBytes(): number {
    return ((this.sql.pageCount.get() as number) - (this.sql.freePages.get() as number)) * (this.sql.pageSize.get() as number);
  }
}

/** What a retention rule keeps of an agent's history, decided once for every store. */
import type { RetentionRule } from './store.js';

/** The tables besides `agents` that hold an agent's rows: deleting an agent deletes its rows in each. */
export const AGENT_TABLES = ['checkpoints', 'actions', 'events', 'effects', 'snapshot_parts', 'agent_inputs'] as const;

/**
 * The oldest checkpoint `rule` keeps: any that one of its rules keeps (the newest N, or those
 * written since a time), and always the last. Undefined: keep everything (no rule set, or no
 * checkpoint yet). `firstSince` is the first seq written at or after `rule.keepSince`, if any.
 */
export function oldestKept(lastSeq: number, rule: RetentionRule, firstSince: number | undefined): number | undefined {
  if (lastSeq === 0) return undefined;
  const kept: number[] = [];
  if (rule.keepNewest !== undefined) kept.push(Math.max(1, lastSeq - Math.max(1, rule.keepNewest) + 1));
  if (rule.keepSince !== undefined) kept.push(Math.min(firstSince ?? lastSeq, lastSeq));
  return kept.length === 0 ? undefined : Math.min(...kept);
}

/** What restoring an agent reads, for both SQL stores (recovery, waking one agent, claiming orphans). */

/**
 * Agents with their last checkpoint, and the spawn input of those that have none: what restoring
 * needs, in one query (callers add the `where` and `order by`; rows convert with `toRestorable`).
 * Reading every agent column and joining every input measured twice as slow on 10,000 agents (SQLite).
 */
export const RESTORABLE = `
  select a.id, a.machine, a.inbox_position, a.event_seq, a.created_at, a.parent,
         case when c.seq is null then (select i.input from agent_inputs i where i.agent_id = a.id) end as input,
         c.seq as c_seq, c.machine_version as c_machine_version, c.event_type as c_event_type,
         c.progress as c_progress, c.snapshot as c_snapshot, c.encoded as c_encoded, c.base_seq as c_base_seq, c.timers as c_timers, c.created_at as c_created_at
  from agents a left join checkpoints c on c.agent_id = a.id and c.seq = a.last_seq`;

/**
 * An agent that something may still move without a new event (it does not rest), or one whose
 * events wait: what `skipResting` keeps. `resting` is an integer in SQLite, a boolean in Postgres;
 * `not` reads both.
 */
export const WORKING = '(not a.resting or a.event_seq > a.inbox_position)';

import type Database from 'better-sqlite3';
import { SchemaTooNewError } from '../../core/errors.js';
import type { Migration } from '../migration.js';

/**
 * Append only: never edit an entry that has shipped; add a new one.
 * Tables holding large JSON (snapshots, answers) are rowid tables on purpose: a WITHOUT ROWID table
 * stores whole rows in its primary-key B-tree, which measured 6× slower for 1.3 KB snapshots.
 */
export const migrations: readonly Migration[] = [
  {
    id: 1,
    name: 'init',
    sql: `
      create table agents (
        pos integer primary key,               -- creation order; the list cursor
        id text not null unique,
        machine text not null,
        machine_version text not null,
        status text not null,
        state text,                            -- JSON state value of the last checkpoint
        progress integer not null default 0,
        input text not null,                   -- JSON
        last_seq integer not null default 0,   -- last committed checkpoint
        inbox_position integer not null default 0,
        event_seq integer not null default 0,  -- last accepted inbox event
        error text,                            -- JSON SerializedError
        created_at text not null,
        updated_at text not null
      );
      create index agents_status on agents (status, pos);
      create index agents_machine on agents (machine, pos);

      create table checkpoints (
        agent_id text not null,
        seq integer not null,
        machine_version text not null,
        event_type text not null,
        state text not null,
        status text not null,
        progress integer not null,
        snapshot text not null,
        created_at text not null,
        primary key (agent_id, seq)
      );

      create table events (
        agent_id text not null,
        seq integer not null,
        type text not null,
        body text not null,
        idempotency_key text,
        created_at text not null,
        primary key (agent_id, seq)
      );
      create unique index events_idempotency on events (agent_id, idempotency_key) where idempotency_key is not null;

      -- seq is the checkpoint that recorded the action: one finished actor per transition at most
      create table actions (
        agent_id text not null,
        seq integer not null,
        action text not null,
        payload text,
        result text,
        created_at text not null,
        primary key (agent_id, seq)
      );

      create table effects (
        idempotency_key text primary key,
        agent_id text not null,
        seq integer not null,
        result text,
        created_at text not null
      );
    `,
  },
  {
    id: 2,
    name: 'resting agents',
    sql: `
      alter table agents add column resting integer not null default 0;
      create index agents_working on agents (status, resting);
    `,
  },
  {
    // An agent's row is rewritten at every transition: its spawn input (often kilobytes of tasks),
    // written once and rarely read, moves out so the hot rows stay small and many fit in a page.
    id: 3,
    name: 'agent inputs apart',
    sql: `
      create table agent_inputs (agent_id text primary key, input text not null);
      insert into agent_inputs (agent_id, input) select id, input from agents;
      alter table agents drop column input;
    `,
  },
  {
    // Checkpoints that store what changed (../checkpoint-encoding.ts): `encoded` 0 = plain JSON,
    // 1 = with references to parts, 2 = a delta against seq − 1 whose chain starts at `base_seq`.
    // A part (../snapshot-parts.ts) is stored once per agent, by hash; `seq`: the checkpoint that
    // first wrote it. Actions' and effects' `encoded` 1: their payload and result refer to parts.
    id: 4,
    name: 'snapshot parts',
    sql: `
      alter table checkpoints add column encoded integer not null default 0;
      alter table checkpoints add column base_seq integer;
      alter table actions add column encoded integer not null default 0;
      alter table effects add column encoded integer not null default 0;
      create table snapshot_parts (
        agent_id text not null,
        hash text not null,
        seq integer not null,
        body text not null,
        primary key (agent_id, hash)
      );
    `,
  },
  {
    // Retention: the oldest checkpoint a policy kept (checkpoints before it were pruned; 0: none). No
    // index on checkpoint times: it would be written with every checkpoint (~700 bytes each, measured),
    // and a prune finds the first kept time along the primary key from the oldest, a few rows.
    id: 5,
    name: 'retention',
    sql: `
      alter table agents add column pruned_before integer not null default 0;
      create index agents_ended on agents (status, updated_at) where status in ('done', 'stopped');
    `,
  },
  {
    // Durable delays: each checkpoint keeps the delays pending after it (JSON, null when none), and
    // the agent row the earliest deadline of its last checkpoint's, so that an agent not in memory
    // is woken for it. Partial index: only agents that wait for a deadline are in it.
    id: 6,
    name: 'durable delays',
    sql: `
      alter table checkpoints add column timers text;
      alter table agents add column wake_at integer;
      create index agents_wake on agents (wake_at) where wake_at is not null;
    `,
  },
  {
    // Child agents: the agent that spawned this one (null: none). Partial index: a parent's children
    // are listed for its view and when it is stopped; most agents have no parent.
    id: 7,
    name: 'child agents',
    sql: `
      alter table agents add column parent text;
      create index agents_parent on agents (parent) where parent is not null;
    `,
  },
  {
    // An event sent under an Idempotency-Key keeps the sha256 of its canonical JSON (../event-hash.ts):
    // the same key with another body is refused, also once pruning has cut the body to its type.
    // Null for events stored before, and for the runtime's own reports (their key alone decides).
    id: 8,
    name: 'event body hashes',
    sql: `
      alter table events add column body_hash text;
    `,
  },
];

/** Brings the schema up to date, one transaction per migration; refuses a newer schema. */
export function migrate(db: Database.Database): void {
  db.exec('create table if not exists schema_migrations (id integer primary key, name text not null, applied_at text not null)');
  const row = db.prepare('select max(id) as id from schema_migrations').get() as { id: number | null };
  const current = row.id ?? 0;
  const latest = migrations.at(-1)?.id ?? 0;
  if (current > latest) throw new SchemaTooNewError(current, latest);
  const record = db.prepare('insert into schema_migrations (id, name, applied_at) values (?, ?, ?)');
  for (const migration of migrations.filter((m) => m.id > current)) {
    db.transaction(() => {
      db.exec(migration.sql);
      record.run(migration.id, migration.name, new Date().toISOString());
    }).immediate();
  }
}

/** The schema's version and this build's, read without writing: a read-only store cannot migrate. */
export function schemaVersions(db: Database.Database): { current: number; latest: number } {
  const latest = migrations.at(-1)?.id ?? 0;
  const table = db.prepare("select 1 from sqlite_master where type = 'table' and name = 'schema_migrations'").get();
  if (!table) return { current: 0, latest };
  const row = db.prepare('select max(id) as id from schema_migrations').get() as { id: number | null };
  return { current: row.id ?? 0, latest };
}

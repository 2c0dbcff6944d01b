import pg from 'pg';
import { SchemaTooNewError } from '../../core/errors.js';
import type { Migration } from '../migration.js';

/**
 * Append only: never edit an entry that has shipped; add a new one. The same tables as the SQLite
 * store, plus who runs which agent (`agents.owner`, `processes`). JSON and timestamps are `text`
 * exactly as the callers give them (snapshots must come back byte for byte); `progress` is a double
 * because a machine's context may hold any number there.
 */
export const migrations: readonly Migration[] = [
  {
    id: 1,
    name: 'init',
    sql: `
      create table agents (
        pos bigserial primary key,                -- creation order; the list cursor
        id text not null unique,
        machine text not null,
        machine_version text not null,
        status text not null,
        state text,                               -- JSON state value of the last checkpoint
        progress double precision not null default 0,
        last_seq bigint not null default 0,       -- last committed checkpoint
        inbox_position bigint not null default 0,
        event_seq bigint not null default 0,      -- last accepted inbox event
        error text,                               -- JSON SerializedError
        resting boolean not null default false,
        owner text,                               -- the process that runs it (processes.id)
        created_at text not null,
        updated_at text not null
      );
      create index agents_status on agents (status, pos);
      create index agents_machine on agents (machine, pos);
      create index agents_working on agents (status, resting);
      create index agents_owner on agents (owner);

      -- Written once at spawn and read rarely (fork): kept off the row every transition rewrites.
      create table agent_inputs (agent_id text primary key, input text not null);

      create table checkpoints (
        agent_id text not null,
        seq bigint not null,
        machine_version text not null,
        event_type text not null,
        state text not null,
        status text not null,
        progress double precision not null,
        snapshot text not null,
        created_at text not null,
        primary key (agent_id, seq)
      );

      create table events (
        agent_id text not null,
        seq bigint not null,
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
        seq bigint not null,
        action text not null,
        payload text,
        result text,
        created_at text not null,
        primary key (agent_id, seq)
      );

      create table effects (
        idempotency_key text primary key,
        agent_id text not null,
        seq bigint not null,
        result text,
        created_at text not null
      );

      -- One row per live server process; its lease runs until lease_until (the database's clock).
      create table processes (
        id text primary key,
        lease_until timestamptz not null
      );
    `,
  },
  {
    // Checkpoints that store what changed (../checkpoint-encoding.ts): `encoded` 0 = plain JSON,
    // 1 = with references to parts, 2 = a delta against seq − 1 whose chain starts at `base_seq`.
    // A part (../snapshot-parts.ts) is stored once per agent, by hash; `seq`: the checkpoint that
    // first wrote it. Actions' and effects' `encoded`: their payload and result refer to parts.
    id: 2,
    name: 'snapshot parts',
    sql: `
      alter table checkpoints add column encoded smallint not null default 0;
      alter table checkpoints add column base_seq bigint;
      alter table actions add column encoded boolean not null default false;
      alter table effects add column encoded boolean not null default false;
      create table snapshot_parts (
        agent_id text not null,
        hash text not null,
        seq bigint not null,
        body text not null,
        primary key (agent_id, hash)
      );
    `,
  },
  {
    // Retention: the oldest checkpoint a policy kept (checkpoints before it were pruned; 0: none). No
    // index on checkpoint times: it would be written with every checkpoint (~700 bytes each, measured),
    // and a prune finds the first kept time along the primary key from the oldest, a few rows.
    id: 3,
    name: 'retention',
    sql: `
      alter table agents add column pruned_before bigint not null default 0;
      create index agents_ended on agents (status, updated_at) where status in ('done', 'stopped');
    `,
  },
  {
    // Durable delays: each checkpoint keeps the delays pending after it (JSON, null when none), and
    // the agent row the earliest deadline of its last checkpoint's, so that an agent not in memory
    // is woken for it. Partial index: only agents that wait for a deadline are in it.
    id: 4,
    name: 'durable delays',
    sql: `
      alter table checkpoints add column timers text;
      alter table agents add column wake_at bigint;
      create index agents_wake on agents (wake_at) where wake_at is not null;
    `,
  },
  {
    // Child agents: the agent that spawned this one (null: none). Partial index: a parent's children
    // are listed for its view and when it is stopped; most agents have no parent.
    id: 5,
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
    id: 6,
    name: 'event body hashes',
    sql: `
      alter table events add column body_hash text;
    `,
  },
  {
    // The LLM concurrency limit shared by every process of the database (llm-slots.ts): a call holds
    // one row while it runs. Rows are added as processes ask for higher limits.
    id: 7,
    name: 'llm slots',
    sql: `
      create table llm_slots (slot integer primary key, holder text, held_until timestamptz);
    `,
  },
  {
    // The tools' concurrency limits shared by every process of the database (tool-slots.ts): one
    // set of rows per pool (a tool's URL, an MCP server, a code tool's name), a call holding one.
    id: 8,
    name: 'tool slots',
    sql: `
      create table tool_slots (pool text not null, slot integer not null, holder text, held_until timestamptz, primary key (pool, slot));
    `,
  },
  {
    // Slots are held for seconds and worth nothing after a crash (a hold runs out by itself), so
    // their writes skip the WAL: taking and giving back a slot no longer waits for a WAL flush
    // (bench postgres: llmSlotUsPerCall). A database that crashes empties them; the slots' code
    // adds the rows again when it finds none.
    id: 9,
    name: 'unlogged slots',
    sql: `
      alter table llm_slots set unlogged;
      alter table tool_slots set unlogged;
    `,
  },
];

/**
 * Brings `schema` up to date, one transaction per migration. Several processes may start at once:
 * each transaction first takes a lock named after the schema, so they apply every migration once,
 * in turn, and each sees what the others did. Creates the schema when `create` is set.
 */
export async function migrate(client: pg.ClientBase, schema: string, options: { create: boolean }): Promise<void> {
  const latest = migrations.at(-1)?.id ?? 0;
  for (;;) {
    await client.query('begin');
    try {
      await client.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`durable-agents migrations ${schema}`]);
      if (options.create) await client.query(`create schema if not exists ${pg.escapeIdentifier(schema)}`);
      await client.query(
        'create table if not exists schema_migrations (id integer primary key, name text not null, applied_at timestamptz not null)',
      );
      const { rows } = await client.query<{ id: number | null }>('select max(id) as id from schema_migrations');
      const current = rows[0]?.id ?? 0;
      if (current > latest) throw new SchemaTooNewError(current, latest);
      const next = migrations.find((m) => m.id > current);
      if (next) {
        await client.query(next.sql);
        await client.query('insert into schema_migrations (id, name, applied_at) values ($1, $2, now())', [next.id, next.name]);
      }
      await client.query('commit');
      if (!next) return;
    } catch (err) {
      // A failed rollback means a lost connection, which ends the transaction anyway: report the cause.
      await client.query('rollback').catch(() => undefined);
      throw err;
    }
  }
}

/** A read-only store cannot migrate: its schema must be this build's already. */
export async function assertSchemaCurrent(client: pg.ClientBase, schema: string): Promise<void> {
  const latest = migrations.at(-1)?.id ?? 0;
  const { rows: [table] } = await client.query<{ found: string | null }>("select to_regclass('schema_migrations')::text as found");
  if (!table?.found) throw new Error(`schema ${schema} holds no durable-agents tables`);
  const { rows } = await client.query<{ id: number | null }>('select max(id) as id from schema_migrations');
  const current = rows[0]?.id ?? 0;
  if (current > latest) throw new SchemaTooNewError(current, latest);
  if (current < latest) {
    throw new Error(`schema ${schema} is at version ${current} and this build reads version ${latest}; a read-only store cannot migrate it (start a writer on it once)`);
  }
}

/**
 * Crash recovery with real SIGKILLs: a worker process runs agents on a SQLite file, talking to a
 * fake OpenAI server and a webhook sink that live here, in the parent, so their records survive
 * every kill. The kill moments, the commands, the latencies and the faults come from one seed.
 * (crash-postgres.test.ts does the same with several processes sharing one Postgres schema.)
 */
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { wholeAction, type StoredAction, type WholeAction } from './stored-actions.js';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { tempDbFile } from '../helpers/temp.js';
import { CommittedTurns, expectGuarantees, figuresLine } from './crash-checks.js';
import {
  CommandPlan,
  killAllWorkers,
  SEED,
  seededRandom,
  sleep,
  startCrashServices,
  waitFor,
  Worker,
  type CrashDb,
  type CrashServices,
} from './crash-harness.js';
import type { CommittedTurn } from './crash-tools.js';

const KILLS = Number(process.env.CRASH_KILLS ?? 24);

/** The committed LLM calls (of one agent, or all), put back together from the agent's parts. */
function callsOf(conn: Database.Database, agentId?: string): WholeAction[] {
  const rows = conn
    .prepare(`select agent_id, payload, result, encoded from actions where action = 'callLlm' ${agentId === undefined ? '' : 'and agent_id = ?'}`)
    .all(...(agentId === undefined ? [] : [agentId])) as StoredAction[];
  const part = conn.prepare('select body from snapshot_parts where agent_id = ? and hash = ?').pluck();
  return rows.map((row) => wholeAction(row, (id, hash) => part.get(id, hash) as string | undefined));
}

/** Reads of the worker's SQLite file, each on a connection of its own (the worker may be mid-write). */
function sqliteDb(file: string): CrashDb {
  const read = <T>(query: (conn: Database.Database) => T, empty: T): T => {
    if (!fs.existsSync(file)) return empty; // killed before it created the file
    const conn = new Database(file);
    try {
      return query(conn);
    } finally {
      conn.close();
    }
  };
  return {
    answerCommitted: (agentId, response) =>
      read((conn) => callsOf(conn, agentId).some((a) => a.result?.output?.content === response), false),
    toolCallCommitted: (agentId, callId) =>
      read((conn) => callsOf(conn, agentId).some((a) => a.result?.output?.toolCalls?.some((call) => call.id === callId) === true), false),
    committedTurns: async () =>
      read(
        (conn) =>
          callsOf(conn)
            .filter((a) => a.result?.ok === true)
            .map((a) => ({ agentId: a.agentId, messages: a.payload!.input!.messages as CommittedTurn['messages'], answer: a.result!.output as CommittedTurn['answer'] })),
        [],
      ),
    effects: async () =>
      read(
        (conn) =>
          (conn.prepare(`select idempotency_key, agent_id, seq, result from effects`).all() as { idempotency_key: string; agent_id: string; seq: number; result: string | null }[]).map(
            (r) => ({ key: r.idempotency_key, agentId: r.agent_id, seq: r.seq, result: r.result === null ? null : (JSON.parse(r.result) as unknown) }),
          ),
        [],
      ),
    progress: async () => read((conn) => (conn.prepare(`select coalesce(sum(progress), 0) as p from agents`).get() as { p: number }).p, 0),
    histories: async () =>
      read((conn) => {
        const histories = new Map<string, { lastSeq: number; checkpoints: { seq: number; progress: number }[] }>();
        for (const { id, last_seq } of conn.prepare(`select id, last_seq from agents`).all() as { id: string; last_seq: number }[]) {
          histories.set(id, { lastSeq: last_seq, checkpoints: [] });
        }
        const rows = conn.prepare(`select agent_id, seq, progress from checkpoints order by agent_id, seq`).all() as {
          agent_id: string;
          seq: number;
          progress: number;
        }[];
        for (const r of rows) histories.get(r.agent_id)?.checkpoints.push({ seq: r.seq, progress: r.progress });
        return histories;
      }, new Map()),
  };
}

describe('crash recovery under SIGKILL', () => {
  let services: CrashServices;
  const schedule = seededRandom(SEED); // kills and commands
  const db = tempDbFile();
  const store = sqliteDb(db);

  beforeAll(async () => {
    services = await startCrashServices(store, seededRandom(SEED + 1), seededRandom(SEED + 2)); // latency and faults: the fake LLM's, the tools'
  });

  afterAll(async () => {
    await killAllWorkers();
    await services?.close();
  });

  it(`loses no acknowledged task, never re-asks a committed answer, and keys every effect (seed ${SEED})`, async () => {
    onTestFailed(() => console.error(`The crash test failed with CRASH_SEED=${SEED}: set it to run this schedule again.`));
    const { fake, sink } = services;
    const plan = new CommandPlan(schedule, sink.url, services.tools.inputs);
    const { commands } = plan;
    const acked = new Set<number>();
    const committed = new CommittedTurns();
    const start = (commitDelayMs: number) => new Worker({ store: `sqlite:${db}`, llmUrl: fake.url, commitDelayMs });

    // Commands are written to the worker's stdin on schedule; a worker handles its stdin in order,
    // re-sent spawns first, so an agent exists by the time a task is added to it.
    /** Kills that landed on a live worker, and among them those after it was ready (running agents). */
    let kills = 0;
    let killsWhileRunning = 0;
    for (let round = 0; round < KILLS; round++) {
      const pending = commands.filter((c) => !acked.has(c.n));
      const { sends, killDuringStartup, killAfter, commitDelayMs } = plan.round();
      if (schedule.next() < 0.3) sink.enqueueStatuses(503);
      const worker = start(commitDelayMs);
      // What the last process never acknowledged goes first, with the same idempotency keys.
      for (const c of pending) worker.send(c);
      const timers = sends.map(({ at, command }) => setTimeout(() => worker.send(command), at));
      if (!killDuringStartup) await worker.whenReady;
      await sleep(killAfter);
      const wasRunning = worker.ready;
      const landed = await worker.kill();
      timers.forEach(clearTimeout);
      if (landed) {
        kills++;
        if (wasRunning) killsWhileRunning++;
      }
      for (const n of worker.acks) acked.add(n);
      expect(worker.errors).toEqual([]);
      expect(worker.missing).toEqual([]);
      await committed.read(store);
    }

    // A last process, never killed, finishes everything.
    const final = start(0);
    for (const c of commands.filter((c) => !acked.has(c.n))) final.send(c);
    const totalTasks = plan.totalTasks;
    const finished = await waitFor(async () => final.acks.size >= commands.length - acked.size && (await store.progress()) >= totalTasks, 60_000);
    expect(finished, 'the last worker acknowledged every command and processed every task').toBe(true);
    for (const n of final.acks) acked.add(n);
    expect(await final.kill()).toBe(true); // still alive at the end: it never exited on its own
    expect(final.errors).toEqual([]);
    expect(final.missing).toEqual([]);

    const figures = await expectGuarantees({ plan, acked, services, db: store, committed });
    console.log(
      `crash test seed=${SEED}: ${kills} kills (${killsWhileRunning} while running agents), ${commands.length} commands, ${totalTasks} tasks, ` +
        `${fake.calls.length} LLM calls (${committed.size} turns of ${committed.tasks} tasks committed before a kill), ${figuresLine(figures)}`,
    );
    // Every kill landed on a live worker (none had exited on its own), most of them while it ran agents.
    expect(kills).toBe(KILLS);
    expect(kills).toBeGreaterThanOrEqual(20);
    expect(killsWhileRunning).toBeGreaterThan(KILLS / 2);
    // Not a vacuous run: most tasks had turns committed while processes were still being killed, and
    // tool calls were made, some answered 503 and retried.
    expect(committed.tasks).toBeGreaterThan(totalTasks / 2);
    expect(figures.toolCalls).toBeGreaterThan(totalTasks / 2);
    expect(figures.toolUnavailable).toBeGreaterThan(0);
  }, 240_000);
});

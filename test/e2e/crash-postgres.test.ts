/**
 * Crash recovery with real SIGKILLs, scaled out: several worker processes share one Postgres schema.
 * Commands go to the workers in turn, whichever process runs the agent; at seeded moments one worker
 * is SIGKILLed and a new one started in its place, and what it never acknowledged is sent again to
 * another. The lease is short, so the others take the dead process's agents over while the run goes
 * on. At the end the same guarantees as the SQLite crash test (crash.test.ts) hold across processes,
 * each agent's checkpoints in the database are one history (seqs 1..N, one answer per task), and,
 * from what each worker reports it claimed and committed, no agent ever moved to another process,
 * or had a checkpoint committed by one, while the process that ran it before was alive (fencing).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { freshSchema, postgresUrl } from '../helpers/postgres.js';
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
  type WorkerCommand,
} from './crash-harness.js';
import type { CommittedTurn } from './crash-tools.js';
import type { WorkerMessage } from './crash-worker.js';
import { wholeActionFrom, type StoredAction, type WholeAction } from './stored-actions.js';

const WORKERS = Number(process.env.CRASH_PG_WORKERS ?? 3);
const KILLS = Number(process.env.CRASH_PG_KILLS ?? 12);
/** Short, so that a dead process's agents are taken over (after about 1¼ leases) while commands still come in. */
// Short enough that takeovers happen during the run, long enough that a stall of a loaded 2-core
// machine does not end a live worker's lease (the test fails on any lease-lost warning).
const LEASE_MS = 2000;

/** The committed LLM calls (of one agent, or all), put back together from the agents' parts. */
async function callsOf(pool: pg.Pool, agentId?: string): Promise<WholeAction[]> {
  const where = agentId === undefined ? '' : 'and agent_id = $1';
  const params = agentId === undefined ? [] : [agentId];
  const { rows } = await pool.query<StoredAction>(`select agent_id, payload, result, encoded from actions where action = 'callLlm' ${where}`, params);
  const parts = await pool.query<{ agent_id: string; hash: string; body: string }>(
    `select agent_id, hash, body from snapshot_parts where true ${where}`,
    params,
  );
  const bodies = new Map(parts.rows.map((p) => [`${p.agent_id}/${p.hash}`, p.body]));
  return rows.map((row) => wholeActionFrom(row, bodies));
}

/** Reads of the shared schema, on a few connections kept open (a delivery's check starts at once). */
function postgresDb(pool: pg.Pool): CrashDb {
  return {
    answerCommitted: async (agentId, response) => (await callsOf(pool, agentId)).some((a) => a.result?.output?.content === response),
    toolCallCommitted: async (agentId, callId) =>
      (await callsOf(pool, agentId)).some((a) => a.result?.output?.toolCalls?.some((call) => call.id === callId) === true),
    committedTurns: async () =>
      (await callsOf(pool))
        .filter((a) => a.result?.ok === true)
        .map((a) => ({ agentId: a.agentId, messages: a.payload!.input!.messages as CommittedTurn['messages'], answer: a.result!.output as CommittedTurn['answer'] })),
    effects: async () =>
      (
        await pool.query<{ key: string; agent_id: string; seq: number; result: string | null }>(
          `select idempotency_key as key, agent_id, seq::int as seq, result from effects`,
        )
      ).rows.map((r) => ({ key: r.key, agentId: r.agent_id, seq: r.seq, result: r.result === null ? null : (JSON.parse(r.result) as unknown) })),
    progress: async () => (await pool.query<{ p: number }>(`select coalesce(sum(progress), 0)::float8 as p from agents`)).rows[0]!.p,
    histories: async () => {
      const histories = new Map<string, { lastSeq: number; checkpoints: { seq: number; progress: number }[] }>();
      const agents = await pool.query<{ id: string; last_seq: number }>(`select id, last_seq::int as last_seq from agents`);
      for (const { id, last_seq } of agents.rows) histories.set(id, { lastSeq: last_seq, checkpoints: [] });
      const rows = await pool.query<{ agent_id: string; seq: number; progress: number }>(
        `select agent_id, seq::int as seq, progress from checkpoints order by agent_id, seq`,
      );
      for (const r of rows.rows) histories.get(r.agent_id)?.checkpoints.push({ seq: r.seq, progress: r.progress });
      return histories;
    },
  };
}

describe('crash recovery under SIGKILL, several processes on one Postgres', () => {
  let services: CrashServices;
  const schema = freshSchema();
  const pool = new pg.Pool({ connectionString: postgresUrl, options: `-c search_path=${schema}`, max: 4 });
  pool.on('error', () => undefined);
  const db = postgresDb(pool);

  beforeAll(async () => {
    // The schema and its tables exist before any worker (and any check) runs: a worker killed
    // during its start-up may never have created them.
    await (await openPostgresStore(postgresUrl, { schema })).close();
    services = await startCrashServices(db, seededRandom(SEED + 1), seededRandom(SEED + 2)); // latency and faults: the fake LLM's, the tools'
  });

  afterAll(async () => {
    await killAllWorkers();
    await services?.close();
    await pool.end();
  });

  it(`loses no acknowledged task, never re-asks a committed answer, keys every effect and fences every agent (seed ${SEED}, ${WORKERS} processes)`, async () => {
    onTestFailed(() => console.error(`The crash test failed with CRASH_SEED=${SEED}: set it to run this schedule again.`));
    const { fake, sink } = services;
    const schedule = seededRandom(SEED); // kills and commands
    const plan = new CommandPlan(schedule, sink.url, services.tools.inputs);
    const { commands } = plan;
    const acked = new Set<number>();
    const committed = new CommittedTurns();

    /** The worker now in each slot; a killed worker's slot gets a new one at once. */
    const slots: Worker[] = [];
    /** Commands sent to a worker that has not answered yet. */
    const inFlight = new Map<number, Worker>();
    /** How many times each command has been sent. */
    const sent = new Map<number, number>();
    /** Adds that found no agent, until their agent's spawn is acknowledged. */
    const waiting = new Map<string, WorkerCommand[]>();
    const spawned = new Set<string>();
    /** Which worker last started running each agent (spawned it or claimed it), and which last committed a checkpoint of it. */
    const runner = new Map<string, Worker>();
    const writer = new Map<string, Worker>();
    let takeovers = 0;
    let takeoversBySurvivors = 0;
    /** Agents whose checkpoints were committed by more than one process. */
    const handedOver = new Set<string>();
    /**
     * An agent claimed from, or committed after, a process still alive: two processes ran it at once.
     * Fencing forbids the second unless the first lost its lease, and no process here lives through a
     * pause that long (a lost lease is logged, and fails the test below).
     */
    const fencing: string[] = [];
    let missing = 0;

    // In turn, by command number; a command sent again goes to the next worker along.
    const dispatch = (command: WorkerCommand) => {
      const times = sent.get(command.n) ?? 0;
      sent.set(command.n, times + 1);
      const worker = slots[(command.n + times) % WORKERS]!;
      inFlight.set(command.n, worker);
      worker.send(command);
    };
    const onMessage = (message: WorkerMessage, worker: Worker) => {
      if ('ack' in message) {
        const command = commands[message.ack]!;
        acked.add(command.n);
        inFlight.delete(command.n);
        if (command.op === 'spawn' && !spawned.has(command.id)) {
          spawned.add(command.id);
          for (const add of waiting.get(command.id) ?? []) dispatch(add);
          waiting.delete(command.id);
        }
      } else if ('missing' in message) {
        // Sent before its agent's spawn was committed (the spawn went to another worker): again once it is.
        const command = commands[message.missing]!;
        missing++;
        inFlight.delete(command.n);
        if (spawned.has(command.id)) dispatch(command);
        else waiting.set(command.id, [...(waiting.get(command.id) ?? []), command]);
      } else if ('owns' in message) {
        for (const id of message.owns) {
          const before = runner.get(id);
          if (before && before !== worker) {
            takeovers++;
            if (!before.killed) fencing.push(`${id} claimed by process ${worker.pid} from process ${before.pid}, alive`);
            if (worker.ready) takeoversBySurvivors++; // not at its own start-up: while running others
          }
          runner.set(id, worker);
        }
      } else if ('checkpoints' in message) {
        for (const [id, seq] of message.checkpoints) {
          const before = writer.get(id);
          if (before && before !== worker) {
            handedOver.add(id);
            if (!before.killed) fencing.push(`${id}@${seq} committed by process ${worker.pid} after process ${before.pid}, alive`);
          }
          writer.set(id, worker);
        }
      }
    };
    const start = (commitDelayMs: number) =>
      new Worker({ store: `postgres:${postgresUrl}#${schema}`, llmUrl: fake.url, commitDelayMs, leaseMs: LEASE_MS, logLevel: 'warn' }, onMessage);

    for (let slot = 0; slot < WORKERS; slot++) slots.push(start(schedule.next() < 0.5 ? 0 : schedule.int(1, 20)));
    /** Commands to send at the start of the next round: never sent (their round's kill came first) or never answered by a killed worker. */
    const held: WorkerCommand[] = [];
    let restarted: number | undefined;
    let kills = 0;
    let killsWhileRunning = 0;
    const killed: Worker[] = [];
    for (let round = 0; round < KILLS; round++) {
      const { sends, killAfter, commitDelayMs } = plan.round();
      if (schedule.next() < 0.3) sink.enqueueStatuses(503);
      // Every fourth kill hits the worker that replaced the last victim during its start-up (it may
      // be claiming that victim's agents); the others, a worker drawn, once it is up and running.
      const drawn = schedule.int(0, WORKERS - 1);
      const killDuringStartup = round % 4 === 3;
      const victimSlot = killDuringStartup ? restarted! : drawn;
      for (const c of held.splice(0).sort((a, b) => a.n - b.n)) dispatch(c);
      const unsent = new Set(sends.map((s) => s.command));
      const timers = sends.map(({ at, command }) =>
        setTimeout(() => {
          unsent.delete(command);
          dispatch(command);
        }, at),
      );
      const victim = slots[victimSlot]!;
      if (!killDuringStartup) await victim.whenReady;
      await sleep(killAfter);
      const wasRunning = victim.ready;
      const landed = await victim.kill();
      timers.forEach(clearTimeout);
      // Synchronously, so no command goes to the dead worker from here on: what it never answered
      // goes to the others at the next round's start, with the same idempotency keys.
      held.push(...unsent);
      for (const [n, worker] of inFlight) {
        if (worker !== victim) continue;
        inFlight.delete(n);
        held.push(commands[n]!);
      }
      slots[victimSlot] = start(commitDelayMs);
      restarted = victimSlot;
      killed.push(victim);
      if (landed) {
        kills++;
        if (wasRunning) killsWhileRunning++;
      }
      expect(victim.errors).toEqual([]);
      await committed.read(db);
    }

    // The last workers, never killed, finish everything.
    for (const c of held.splice(0).sort((a, b) => a.n - b.n)) dispatch(c);
    const totalTasks = plan.totalTasks;
    const finished = await waitFor(async () => acked.size === commands.length && (await db.progress()) >= totalTasks, 60_000);
    expect(finished, 'the workers acknowledged every command and processed every task').toBe(true);
    const survivors = [...slots];
    for (const worker of survivors) expect(await worker.kill()).toBe(true); // none exited on its own
    for (const worker of [...killed, ...survivors]) expect(worker.errors).toEqual([]);
    // Warnings and errors the runtime logged (a lease lost by a live process, a commit that failed):
    // none is expected here, and any would explain a failure below.
    const logged = [...killed, ...survivors].flatMap((w) => w.log.map((l) => `${l.name}: ${l.msg}`));
    if (logged.length + fencing.length > 0) console.warn([...logged, ...fencing].join('\n'));

    const figures = await expectGuarantees({ plan, acked, services, db, committed });
    console.log(
      `crash test (Postgres) seed=${SEED}: ${WORKERS} processes, lease ${LEASE_MS} ms, ${kills} kills (${killsWhileRunning} while running agents), ` +
        `${takeovers} agents taken over from a killed process (${takeoversBySurvivors} by a process already running), ` +
        `${handedOver.size} of ${plan.expectedTasks().size} agents with checkpoints from several processes, ` +
        `${commands.length} commands (${missing} adds sent again: their spawn was not committed yet), ${totalTasks} tasks, ` +
        `${fake.calls.length} LLM calls (${committed.size} turns of ${committed.tasks} tasks committed before a kill), ${figuresLine(figures)}`,
    );
    expect(fencing).toEqual([]);
    expect(logged).toEqual([]);
    // Every kill landed on a live worker, most of them while it ran agents.
    expect(kills).toBe(KILLS);
    expect(killsWhileRunning).toBeGreaterThan(KILLS / 2);
    // Not a vacuous run: agents changed process, some taken by a process already running others, and
    // most tasks had turns committed while processes were still being killed.
    expect(takeovers).toBeGreaterThanOrEqual(KILLS / 2);
    expect(takeoversBySurvivors).toBeGreaterThan(0);
    expect(handedOver.size).toBeGreaterThanOrEqual(KILLS / 3);
    expect(committed.tasks).toBeGreaterThan(totalTasks / 2);
    // Tool calls were made, some answered 503 and retried.
    expect(figures.toolCalls).toBeGreaterThan(totalTasks / 2);
    expect(figures.toolUnavailable).toBeGreaterThan(0);
  }, 240_000);
});

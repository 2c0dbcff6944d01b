/**
 * Crash recovery with real SIGKILLs: a worker process runs agents on a SQLite file, talking to a
 * fake OpenAI server and a webhook sink that live here, in the parent, so their records survive
 * every kill. The kill moments, the commands, the latencies and the faults come from one seed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextRandom } from '../../src/resilience/random.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { startWebhookSink, type WebhookSink } from '../support/webhook-sink.js';
import { tempDbFile } from '../helpers/temp.js';
import type { WorkerCommand } from './crash-worker.js';

const SEED = Number(process.env.CRASH_SEED ?? 20261130);
const KILLS = Number(process.env.CRASH_KILLS ?? 24);
const WORKER = path.join(import.meta.dirname, 'crash-worker.ts');

function seededRandom(seed: number) {
  let state = seed;
  const next = () => {
    const draw = nextRandom(state);
    state = draw.state;
    return draw.value;
  };
  return { next, int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)) };
}

class Worker {
  readonly acks = new Set<number>();
  readonly errors: string[] = [];
  ready = false;
  readonly whenReady: Promise<void>;
  readonly exited: Promise<NodeJS.Signals | number | null>;
  private readonly child: ChildProcess;
  /** Resolves once the process has exited and its stdio is closed (its stderr fully read). */
  private readonly closed: Promise<void>;

  constructor(db: string, llmUrl: string, commitDelayMs: number) {
    // The shipped default: synchronous=FULL with group commit.
    const args = [WORKER, db, llmUrl, 'full', String(commitDelayMs)];
    this.child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, LOG_LEVEL: 'silent' },
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve(signal ?? code)));
    let onReady = () => {};
    this.whenReady = new Promise((resolve) => (onReady = resolve));
    readline.createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const message = JSON.parse(line) as { ready?: boolean; ack?: number };
      if (message.ready) (this.ready = true), onReady();
      if (message.ack !== undefined) this.acks.add(message.ack);
    });
    // Whatever a worker wrote to stderr, killed or not (an uncaught error, a warning, a failed
    // start-up): it runs with logs silenced, so anything there is a fault. Collected once the
    // streams are closed, which comes after `exit`.
    let stderr = '';
    this.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    this.closed = new Promise((resolve) =>
      this.child.once('close', () => {
        if (stderr.trim()) this.errors.push(stderr);
        resolve();
      }),
    );
    this.child.stdin!.on('error', () => {}); // writes racing a kill
  }

  send(command: WorkerCommand): void {
    this.child.stdin!.write(`${JSON.stringify(command)}\n`);
  }

  /** SIGKILL; resolves with whether it landed on a live process (false: the worker had exited on its own). */
  async kill(): Promise<boolean> {
    this.child.kill('SIGKILL');
    const ended = await this.exited;
    await this.closed;
    return ended === 'SIGKILL';
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('crash recovery under SIGKILL', () => {
  let fake: FakeOpenAI;
  let sink: WebhookSink;
  const schedule = seededRandom(SEED); // kills and commands
  const faults = seededRandom(SEED + 1); // the fake LLM's latency and faults
  const db = tempDbFile();
  /** Deliveries whose answer was not in a committed checkpoint when they arrived. */
  const uncommittedDeliveries: string[] = [];

  beforeAll(async () => {
    // Every answer is different, as a real model's would be: an effect sent with an answer that was
    // not committed first would later go out again with another body under the same key.
    let answers = 0;
    fake = await startFakeOpenAI({ answer: (task) => `answer #${++answers} to ${task}` });
    fake.setLatency(() => faults.int(0, 40));
    fake.setFaultPolicy(() => {
      const draw = faults.next();
      if (draw < 0.08) return { kind: 'status', status: 500 };
      if (draw < 0.12) return { kind: 'status', status: 429, retryAfter: '0' };
      return undefined;
    });
    sink = await startWebhookSink({
      onDelivery: ({ idempotencyKey, body }) => {
        const { agentId, response } = body as { agentId: string; response: string };
        const conn = new Database(db);
        try {
          const committed = conn
            .prepare(`select 1 from actions where agent_id = ? and action = 'callLlm' and json_extract(result, '$.output') = ?`)
            .get(agentId, response);
          if (!committed) uncommittedDeliveries.push(`${idempotencyKey}: ${response}`);
        } finally {
          conn.close();
        }
      },
    });
  });

  afterAll(async () => {
    await fake?.close();
    await sink?.close();
  });

  it(`loses no acknowledged task, never re-asks a committed answer, and keys every effect (seed ${SEED})`, async () => {
    const commands: WorkerCommand[] = [];
    const acked = new Set<number>();
    /** Task text → the kill time after which its answer was known to be committed. */
    const committedAt = new Map<string, number>();
    let taskNo = 0;
    const agents: string[] = [];

    // The plan depends on the seed alone, not on timing: commands are numbered and written to the
    // worker's stdin on schedule; tasks are only added to agents spawned in an earlier round, and
    // a worker handles its stdin in order, re-sent spawns first, so the agent exists by then.
    const planRound = () => {
      const known = [...agents];
      const sends = Array.from({ length: schedule.int(1, 6) }, () => {
        const n = commands.length;
        let command: WorkerCommand;
        if (known.length === 0 || schedule.next() < 0.35) {
          const id = `agent-${agents.length}`;
          agents.push(id);
          command = { n, op: 'spawn', id, webhook: sink.url, tasks: Array.from({ length: schedule.int(1, 3) }, () => `task-${taskNo++}`) };
        } else {
          command = { n, op: 'add', id: known[schedule.int(0, known.length - 1)]!, task: `task-${taskNo++}` };
        }
        commands.push(command);
        return { at: schedule.int(0, 1200), command };
      });
      // Most kills land while the worker runs agents; some during its start-up and recovery.
      const killDuringStartup = schedule.next() < 0.2;
      return { killDuringStartup, killAfter: schedule.int(killDuringStartup ? 0 : 50, killDuringStartup ? 800 : 900), commitDelayMs: schedule.next() < 0.5 ? 0 : schedule.int(1, 20), sends };
    };

    const readCommittedAnswers = (at: number) => {
      if (!fs.existsSync(db)) return; // killed before it created the file
      const conn = new Database(db);
      try {
        const rows = conn
          .prepare(
            `select json_extract(payload, '$.input.task') as task from actions
             where action = 'callLlm' and json_extract(result, '$.ok') = 1`,
          )
          .all() as { task: string }[];
        for (const { task } of rows) if (!committedAt.has(task)) committedAt.set(task, at);
      } finally {
        conn.close();
      }
    };

    /** Kills that landed on a live worker, and among them those after it was ready (running agents). */
    let kills = 0;
    let killsWhileRunning = 0;
    for (let round = 0; round < KILLS; round++) {
      const pending = commands.filter((c) => !acked.has(c.n));
      const plan = planRound();
      if (schedule.next() < 0.3) sink.enqueueStatuses(503);
      const worker = new Worker(db, fake.url, plan.commitDelayMs);
      // What the last process never acknowledged goes first, with the same idempotency keys.
      for (const c of pending) worker.send(c);
      const timers = plan.sends.map(({ at, command }) => setTimeout(() => worker.send(command), at));
      if (!plan.killDuringStartup) await worker.whenReady;
      await sleep(plan.killAfter);
      const wasRunning = worker.ready;
      const landed = await worker.kill();
      timers.forEach(clearTimeout);
      if (landed) {
        kills++;
        if (wasRunning) killsWhileRunning++;
      }
      for (const n of worker.acks) acked.add(n);
      expect(worker.errors).toEqual([]);
      readCommittedAnswers(Date.now());
    }

    // A last process, never killed, finishes everything.
    const final = new Worker(db, fake.url, 0);
    for (const c of commands.filter((c) => !acked.has(c.n))) final.send(c);
    const expectedTasks = new Map<string, string[]>(); // agent → its tasks
    for (const c of commands) {
      const list = expectedTasks.get(c.id) ?? [];
      if (c.op === 'spawn') list.unshift(...c.tasks);
      else list.push(c.task);
      expectedTasks.set(c.id, list);
    }
    const totalTasks = [...expectedTasks.values()].reduce((n, list) => n + list.length, 0);
    const progressInDb = () => {
      if (!fs.existsSync(db)) return 0;
      const conn = new Database(db);
      try {
        return (conn.prepare(`select coalesce(sum(progress), 0) as p from agents`).get() as { p: number }).p;
      } finally {
        conn.close();
      }
    };
    const deadline = Date.now() + 60_000;
    while ((final.acks.size < commands.length - acked.size || progressInDb() < totalTasks) && Date.now() < deadline) {
      await sleep(100);
    }
    for (const n of final.acks) acked.add(n);
    expect(await final.kill()).toBe(true); // still alive at the end: it never exited on its own
    expect(final.errors).toEqual([]);

    // 1. Acknowledged work is never lost: every command acknowledged, every task's effect delivered.
    expect(acked.size).toBe(commands.length);
    expect(progressInDb()).toBe(totalTasks);
    const delivered = sink.deliveries.filter((d) => d.status >= 200 && d.status < 300);
    const deliveredTasks = new Set(delivered.map((d) => (d.body as { task: string }).task));
    for (const tasks of expectedTasks.values()) for (const task of tasks) expect(deliveredTasks).toContain(task);

    // 2. Persist before act: every effect carried an answer that was already committed, and no LLM
    // call was made for a task after its answer was seen committed.
    expect(uncommittedDeliveries).toEqual([]);
    const lateCalls = fake.calls.filter((call) => {
      const committed = committedAt.get(call.userContent);
      return committed !== undefined && call.at > committed;
    });
    expect(lateCalls.map((c) => c.userContent)).toEqual([]);

    // 3. Effects are keyed: one body per key, keys = agentId:1..n, distinct keys = tasks processed.
    const byKey = new Map<string, Set<string>>();
    for (const d of sink.deliveries) {
      const bodies = byKey.get(d.idempotencyKey!) ?? new Set();
      bodies.add(d.rawBody);
      byKey.set(d.idempotencyKey!, bodies);
    }
    for (const [key, bodies] of byKey) expect({ key, bodies: bodies.size }).toEqual({ key, bodies: 1 });
    const deliveredKeys = new Set(delivered.map((d) => d.idempotencyKey));
    expect(deliveredKeys.size).toBe(totalTasks);
    for (const [agent, tasks] of expectedTasks) {
      for (let seq = 1; seq <= tasks.length; seq++) expect(deliveredKeys).toContain(`${agent}:${seq}`);
    }

    const duplicates = sink.deliveries.length - deliveredKeys.size;
    console.log(
      `crash test seed=${SEED}: ${kills} kills (${killsWhileRunning} while running agents), ${commands.length} commands, ${totalTasks} tasks, ` +
        `${fake.calls.length} LLM calls (${committedAt.size} answers committed before a kill), ` +
        `${sink.deliveries.length} webhook deliveries, ${duplicates} repeated deliveries (same key, same body)`,
    );
    // Every kill landed on a live worker (none had exited on its own), most of them while it ran agents.
    expect(kills).toBe(KILLS);
    expect(kills).toBeGreaterThanOrEqual(20);
    expect(killsWhileRunning).toBeGreaterThan(KILLS / 2);
    // Not a vacuous run: most answers were committed while processes were still being killed.
    expect(committedAt.size).toBeGreaterThan(totalTasks / 2);
  }, 240_000);
});

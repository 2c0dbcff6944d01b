// Durable delays and messages under SIGKILL: real worker processes (delays-worker.ts) on one SQLite
// file, each killed at a random moment (seeded) and replaced, while 40 agents wait 0.3–4 s on a
// delayed `raise` and an `after` (some are cancelled first), and pingers send messages to counters
// (`sendToAgent`). Afterwards, read from the file: every delay fired exactly once, never before its
// deadline and at most TOLERANCE_MS after it (or after the moment a process was up again, when none
// was at the deadline), no `after` fired into the state that cancelled it, and every message that a
// pinger's acknowledged event sent is in its counter once.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { freshSchema, postgresUrl } from '../helpers/postgres.js';
import { contextOf } from '../../src/runtime/restore.js';
import { ROOT } from '../helpers/server-process.js';
import { tempDbFile } from '../helpers/temp.js';
import { seededRandom, sleep } from './crash-harness.js';
import type { SleeperContext } from './delays-machine.js';
import type { WorkerCommand } from './delays-worker.js';

const WORKER = path.join(import.meta.dirname, 'delays-worker.ts');
const SEED = 20261202;
const AGENTS = 40;
/**
 * How late a delay may fire after its deadline (or after a process came back up): a 2-core machine
 * running the whole suite beside this test (one CI run saw more than 400 ms).
 */
const TOLERANCE_MS = 1_000;

/** A command before it is numbered (an Omit for each member of the union). */
type WithoutN<C> = C extends unknown ? Omit<C, 'n'> : never;

interface RunningWorker {
  child: ChildProcess;
  ready: Promise<number>;
  acks: Set<number>;
  exited: Promise<void>;
}

const workers: RunningWorker[] = [];
afterEach(() => {
  for (const w of workers.splice(0)) w.child.kill('SIGKILL');
});

/** `db`: a SQLite file, or `['--postgres', url#schema, …]`. */
function startWorker(db: string | string[]): RunningWorker {
  const store = typeof db === 'string' ? ['--db', db] : db;
  const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', WORKER, ...store], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  const acks = new Set<number>();
  let readyAt!: (at: number) => void;
  const ready = new Promise<number>((resolve) => (readyAt = resolve));
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    const message = JSON.parse(line) as { ready?: true; ack?: number };
    if (message.ready) readyAt(Date.now());
    if (message.ack !== undefined) acks.add(message.ack);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const worker = { child, ready, acks, exited };
  workers.push(worker);
  return worker;
}

function send(worker: RunningWorker, command: WorkerCommand): void {
  worker.child.stdin!.write(`${JSON.stringify(command)}\n`);
}

describe('durable delays under SIGKILL (real processes)', () => {
  it(`delays fire once each, at their deadline (within ${TOLERANCE_MS} ms), none into a state that cancelled it; messages arrive once (seed ${SEED})`, { timeout: 120_000 }, async () => {
    const random = seededRandom(SEED);
    const db = tempDbFile();
    /** When some process was up and running agents: [ready, killed). */
    const uptimes: [number, number][] = [];
    let worker = startWorker(db);
    let upSince = await worker.ready;

    const plan = Array.from({ length: AGENTS }, (_, i) => ({ id: `s${i}`, ms: random.int(300, 4_000), cancel: i % 5 === 0 }));
    // Commands are sent again to each new process until acknowledged (each event under its own key), as a client would.
    const unacked = new Map<number, WorkerCommand>();
    let n = 0;
    const command = (c: WithoutN<WorkerCommand>) => {
      const full = { ...c, n: ++n } as WorkerCommand;
      unacked.set(full.n, full);
      send(worker, full);
    };
    const settle = () => {
      for (const acked of worker.acks) unacked.delete(acked);
    };
    for (const agent of plan) command({ op: 'spawn', machine: 'sleeper', id: agent.id, input: { ms: agent.ms } });
    for (const agent of plan.filter((a) => a.cancel)) command({ op: 'send', id: agent.id, event: { type: 'cancel' }, key: `cancel-${agent.id}` });
    for (let i = 0; i < 4; i++) {
      command({ op: 'spawn', machine: 'counter', id: `c${i}`, input: {} });
      command({ op: 'spawn', machine: 'pinger', id: `p${i}`, input: {} });
    }
    // Every command acknowledged before the first kill: what is acknowledged is committed.
    while (worker.acks.size < n) await sleep(20);
    settle();

    // Five kills at random moments while the delays come due and pings go out, each followed by a new process on the file.
    const pings: { from: string; to: string; n: number }[] = [];
    for (let kill = 0; kill < 5; kill++) {
      const aliveFor = random.int(150, 900);
      const until = Date.now() + aliveFor;
      while (Date.now() < until) {
        const ping = { from: `p${random.int(0, 3)}`, to: `c${random.int(0, 3)}`, n: pings.length };
        pings.push(ping);
        command({ op: 'send', id: ping.from, event: { type: 'ping', to: ping.to, n: ping.n }, key: `ping-${ping.n}` });
        await sleep(random.int(5, 60));
      }
      settle();
      worker.child.kill('SIGKILL');
      await worker.exited;
      settle();
      uptimes.push([upSince, Date.now()]);
      await sleep(random.int(0, 400));
      worker = startWorker(db);
      upSince = await worker.ready;
      for (const c of unacked.values()) send(worker, c);
    }
    while ([...unacked.keys()].some((k) => !worker.acks.has(k))) await sleep(20);
    await sleep(1_500);
    worker.child.kill('SIGKILL');
    await worker.exited;
    uptimes.push([upSince, Date.now()]);
    expect(uptimes.length).toBeGreaterThan(3);
    expect(pings.length).toBeGreaterThan(30);

    const store = await openSqliteStore(db);
    try {
      for (const agent of plan) {
        const restorable = await store.loadRestorable(agent.id);
        const checkpoint = restorable!.checkpoint!;
        const context = contextOf({ snapshot: checkpoint.snapshot }) as SleeperContext;
        const state = (JSON.parse(checkpoint.snapshot) as { value: unknown }).value;
        // Nothing pending any more: every delay fired (or was cancelled).
        expect(checkpoint.timers, agent.id).toBeUndefined();
        expect(context.ticks, `${agent.id}: ticks`).toBe(1);
        expect(firedOnTime(context.tickAt!, context.startedAt + agent.ms, uptimes), timing(agent.id, 'tick', context.tickAt!, context.startedAt + agent.ms, uptimes)).toBe(true);
        if (agent.cancel) {
          expect(state, agent.id).toBe('cancelled');
          expect(context.afterAt, `${agent.id}: an after fired into the state that cancelled it`).toBeNull();
        } else {
          expect(state, agent.id).toBe('woke');
          expect(firedOnTime(context.afterAt!, context.startedAt + agent.ms + 200, uptimes), timing(agent.id, 'after', context.afterAt!, context.startedAt + agent.ms + 200, uptimes)).toBe(true);
        }
      }
      // Each acknowledged ping's message is in its counter, once (the counters ran them all: no inbox left).
      for (let i = 0; i < 4; i++) {
        const restorable = (await store.loadRestorable(`c${i}`))!;
        const context = contextOf({ snapshot: restorable.checkpoint!.snapshot }) as { got: string[] };
        const expected = pings.filter((p) => p.to === `c${i}`).map((p) => `${p.from}#${p.n}`);
        expect([...context.got].sort(), `c${i}`).toEqual([...expected].sort());
        expect(restorable.agent.inboxPosition, `c${i}: every message consumed`).toBe(restorable.agent.eventSeq);
      }
    } finally {
      await store.close();
    }
  });
});


describe('durable delays when another process takes over (Postgres, real processes)', () => {
  it('the adopter schedules the dead owner\'s delays again: each fires once, not before its deadline, within the lease after it', { timeout: 90_000 }, async () => {
    const LEASE_MS = 1_000;
    const schema = freshSchema();
    const args = ['--postgres', `${postgresUrl}#${schema}`, '--lease-ms', String(LEASE_MS)];
    const owner = startWorker(args);
    await owner.ready;
    const heir = startWorker(args);
    await heir.ready;
    const random = seededRandom(SEED + 1);
    const plan = Array.from({ length: 12 }, (_, i) => ({ id: `t${i}`, ms: random.int(200, 2_500) }));
    plan.forEach((agent, i) => send(owner, { n: i + 1, op: 'spawn', machine: 'sleeper', id: agent.id, input: { ms: agent.ms } }));
    while (owner.acks.size < plan.length) await sleep(20);
    // The owner dies with every delay pending; the heir takes its agents once its lease has run out.
    await sleep(100);
    owner.child.kill('SIGKILL');
    const killedAt = Date.now();
    await owner.exited;
    await sleep(plan.reduce((max, a) => Math.max(max, a.ms), 0) + 200 + LEASE_MS * 3 + 1_000);
    heir.child.kill('SIGKILL');
    await heir.exited;

    const store = await openPostgresStore(postgresUrl, { schema });
    try {
      for (const agent of plan) {
        const checkpoint = (await store.loadRestorable(agent.id))?.checkpoint;
        const context = contextOf({ snapshot: checkpoint!.snapshot }) as SleeperContext;
        expect(checkpoint!.timers, agent.id).toBeUndefined();
        expect(context.ticks, `${agent.id}: ticks`).toBe(1);
        for (const [firedAt, deadline] of [[context.tickAt!, context.startedAt + agent.ms], [context.afterAt!, context.startedAt + agent.ms + 200]] as const) {
          expect(firedAt, agent.id).toBeGreaterThanOrEqual(deadline);
          // At its deadline, or once the heir could take the agent: the lease after the kill, and one more renewal.
          expect(firedAt - Math.max(deadline, killedAt + LEASE_MS), agent.id).toBeLessThanOrEqual(LEASE_MS + TOLERANCE_MS);
        }
      }
    } finally {
      await store.close();
    }
  });
});

/**
 * Not before the deadline (the deadline is counted from the agent's first snapshot, made just before its
 * delays were scheduled), and no later than TOLERANCE_MS after it, or after the first moment a process
 * was up again when none was at the deadline (`from` is when a process said it was ready: it may
 * fire a delay while it recovers, a little before).
 */
function firedOnTime(firedAt: number, deadline: number, uptimes: readonly [number, number][]): boolean {
  if (firedAt < deadline) return false;
  // A process killed soon after the deadline may have fired without committing it (a loaded machine
  // takes a while to commit): the next one fires it again.
  const upAtDeadline = uptimes.some(([from, to]) => from <= deadline && deadline + TOLERANCE_MS < to);
  const due = upAtDeadline ? deadline : (uptimes.find(([from]) => from > deadline)?.[0] ?? deadline);
  return firedAt - due <= TOLERANCE_MS;
}

/** What a failed timing check prints: the fire, its deadline and the processes' uptimes, relative to the deadline. */
function timing(id: string, what: string, firedAt: number, deadline: number, uptimes: readonly [number, number][]): string {
  const rel = (t: number) => t - deadline;
  return `${id}: ${what} fired at deadline${rel(firedAt) >= 0 ? '+' : ''}${rel(firedAt)} ms; processes up (ms from the deadline): ${uptimes.map(([a, b]) => `[${rel(a)}, ${rel(b)})`).join(' ')}`;
}

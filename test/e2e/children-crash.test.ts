// A parent and its children in different Postgres-backed processes, with SIGKILL: the supervisor
// example spawns three reference agents in process A, which is killed while their LLM calls run.
// B (passivating: it leaves resting agents to others) adopts the children, C the waiting parent
// (or B does, when a child's report wakes the parent before C has started: under load C can take
// longer than a call); then B is killed mid-call too and C adopts what B ran. The parent still
// gets each child's answer exactly once, and answers from all three.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { contextOf } from '../../src/runtime/restore.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { workerId, type SupervisorOutput } from '../docs/examples/supervisor-machine.js';
import { freshSchema, postgresUrl } from '../helpers/postgres.js';
import { ROOT } from '../helpers/server-process.js';
import { sleep } from './crash-harness.js';
import type { SpawnCommand } from './children-worker.js';
import type { AgentContext } from '../../src/agents/reference/types.js';

const WORKER = path.join(import.meta.dirname, 'children-worker.ts');
const LEASE_MS = 800;
const LLM_MS = 2_500;

interface Worker {
  child: ChildProcess;
  ready: Promise<string>;
  acks: Set<number>;
  exited: Promise<void>;
}

const workers: Worker[] = [];
afterEach(() => {
  for (const w of workers.splice(0)) w.child.kill('SIGKILL');
});

function startWorker(schema: string, extra: string[] = []): Worker {
  const args = ['--postgres', `${postgresUrl}#${schema}`, '--lease-ms', String(LEASE_MS), '--llm-ms', String(LLM_MS), ...extra];
  const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', WORKER, ...args], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  const acks = new Set<number>();
  let ready!: (processId: string) => void;
  const readyPromise = new Promise<string>((resolve) => (ready = resolve));
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    const message = JSON.parse(line) as { ready?: true; processId?: string; ack?: number };
    if (message.ready) ready(message.processId!);
    if (message.ack !== undefined) acks.add(message.ack);
  });
  const worker = { child, ready: readyPromise, acks, exited: new Promise<void>((resolve) => child.once('exit', () => resolve())) };
  workers.push(worker);
  return worker;
}

async function kill(worker: Worker): Promise<void> {
  worker.child.kill('SIGKILL');
  await worker.exited;
}

describe('child agents across processes (Postgres, SIGKILL)', () => {
  it("a parent gets each child's answer once when parent and children run in different processes and both are killed", { timeout: 90_000 }, async () => {
    const schema = freshSchema();
    const db = new pg.Client({ connectionString: postgresUrl });
    await db.connect();
    const owners = async () => {
      const { rows } = await db.query<{ id: string; owner: string | null }>(`select id, owner from ${pg.escapeIdentifier(schema)}.agents order by id`);
      return Object.fromEntries(rows.map((r) => [r.id, r.owner]));
    };
    const children = [0, 1, 2].map((i) => workerId('s1', i));
    try {
      const a = startWorker(schema);
      await a.ready;
      const spawnCommand: SpawnCommand = { n: 1, machine: 'supervisor', id: 's1', input: { question: 'Should we ship on Friday?', deadlineMs: 60_000 } };
      a.child.stdin!.write(`${JSON.stringify(spawnCommand)}\n`);
      while (!a.acks.has(1)) await sleep(20);
      // The children exist (created with the parent's first checkpoint) and their LLM calls are running in A.
      await sleep(300);
      await kill(a);
      await sleep(LEASE_MS * 1.5);

      // B adopts only what does not rest: the children, whose calls were in flight, before it is
      // ready. Then C the parent, unless a child's report woke it in B first: the race is not the
      // point, one live owner for each agent is (the rest of the test checks that it ran once).
      const b = startWorker(schema, ['--passivate-ms', '60000']);
      const bId = await b.ready;
      const c = startWorker(schema);
      const cId = await c.ready;
      const placed = await owners();
      expect([bId, cId], 's1').toContain(placed.s1);
      for (const child of children) expect(placed[child], child).toBe(bId);

      // B dies mid-call too: C adopts the children once B's lease runs out, and their calls run again.
      await sleep(500);
      await kill(b);

      const store = await openPostgresStore(postgresUrl, { schema });
      try {
        let status = '';
        for (const deadline = Date.now() + 30_000; Date.now() < deadline && status !== 'done'; await sleep(100)) {
          status = (await store.getAgent('s1'))!.status;
        }
        expect(status).toBe('done');
        // Each child's answer is in the parent's inbox exactly once, under the child's key.
        const inbox = await store.eventsAfter('s1', 0);
        expect(inbox.map((e) => [e.event.type, e.idempotencyKey]).sort()).toEqual(children.map((id) => ['agent.response', `${id}:1:response`]));
        const last = (await store.listCheckpoints('s1')).at(-1)!;
        const output = (JSON.parse((await store.getCheckpoint('s1', last.seq))!.snapshot) as { output: SupervisorOutput }).output;
        expect(output.answered).toBe(3);
        for (const child of children) {
          const record = (await store.getAgent(child))!;
          expect(record.parent).toBe('s1');
          const checkpoint = (await store.getCheckpoint(child, record.lastSeq))!;
          const context = contextOf(checkpoint) as AgentContext;
          expect(context.results.map((r) => r.task), child).toEqual(['Should we ship on Friday?']);
          expect(output.answer).toContain(context.results[0]!.response);
        }
      } finally {
        await store.close();
      }
    } finally {
      await db.end();
    }
  });
});

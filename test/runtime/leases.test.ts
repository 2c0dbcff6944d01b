// The runtime on a shared (Postgres) store: what it does when its lease runs out, and when another
// process has taken one of its agents while it still held it in memory.
import { describe, expect, it, vi } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { OwnershipChange } from '../../src/runtime/observer.js';
import { freshSchema, postgresUrl, sql } from '../helpers/postgres.js';
import { isIdleWithProgress, recordingLlm, runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';

const startRuntime = runtimesClosedAfterEach();

async function start(schema: string, leaseMs: number, llm = recordingLlm()) {
  const store = await openPostgresStore(postgresUrl, { schema, leaseMs });
  const changes: { change: OwnershipChange; agents: number }[] = [];
  const observer = { ownershipChanged: (event: (typeof changes)[number]) => void changes.push(event) };
  const { runtime, logs } = await startRuntime({ store, llm: llm.llm, observer, logs: 'captured' });
  return { runtime, store, logs, llm, changes };
}

/** Ends a process's lease behind its back, as a long pause or a partition would. */
const expireLease = (schema: string, processId: string) =>
  sql(`update processes set lease_until = now() - interval '1 second' where id = $1`, [processId], schema);

describe('runtime leases (real Postgres)', () => {
  it('lets every agent go when its lease runs out, then takes them back as orphans and goes on', async () => {
    const schema = freshSchema();
    // Long enough that a loaded machine's event-loop stall does not end it first (ticks every 250 ms).
    const { runtime, store, logs, changes } = await start(schema, 1000);
    await runtime.spawn('agent', { id: 'a', input: { tasks: ['one'] } });
    await waitForView(runtime, 'a', isIdleWithProgress(1));

    await expireLease(schema, store.leases.processId);
    await vi.waitFor(() => expect(logs.some((l) => l.msg === 'lease ran out; stopping every agent this process ran')).toBe(true), {
      timeout: 5000,
    });
    // Disowned with the lease, then claimed again as an orphan on a following tick: it runs here again.
    await vi.waitFor(async () => expect(await sql('select owner from agents where id = $1', ['a'], schema)).toEqual([{ owner: store.leases.processId }]), {
      timeout: 5000,
    });
    await runtime.send('a', { type: 'task.add', task: 'two' });
    await waitForView(runtime, 'a', isIdleWithProgress(2));
    expect(runtime.liveAgents).toBe(1);
    expect(changes).toEqual([{ change: 'lease-lost', agents: 1 }, { change: 'adopted', agents: 1 }]);
  });

  it('a process that still holds an agent another one took over makes no call for it and lets it go', async () => {
    const schema = freshSchema();
    // Long leases: no tick comes to tell the first process it lost its lease; only fencing does.
    const first = await start(schema, 600_000);
    await first.runtime.spawn('agent', { id: 'a', input: {} });
    await waitForView(first.runtime, 'a', (v) => v.state === 'idle');
    await expireLease(schema, first.store.leases.processId);

    const second = await start(schema, 600_000); // adopts the orphan at start
    expect(await sql('select owner from agents where id = $1', ['a'], schema)).toEqual([{ owner: second.store.leases.processId }]);
    expect(first.runtime.liveAgents).toBe(1); // still in the first process's memory

    // The event reaches both: the new owner runs the task; the old one's transition is fenced.
    await second.runtime.send('a', { type: 'task.add', task: 'only once' });
    await waitForView(second.runtime, 'a', isIdleWithProgress(1));
    await vi.waitFor(() => expect(first.runtime.liveAgents).toBe(0), { timeout: 5000 });
    expect(first.logs.some((l) => l.msg === 'agent taken over by another process or stopped elsewhere; let go here')).toBe(true);
    expect(first.llm.calls).toEqual([]);
    expect(second.llm.callsFor('only once')).toBe(1);
    // Its history is one process's: contiguous seqs, no checkpoint of the old owner's after the takeover.
    const seqs = (await sql<{ seq: number }>('select seq from checkpoints where agent_id = $1 order by seq', ['a'], schema)).map((r) => Number(r.seq));
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    expect(first.changes).toEqual([{ change: 'fenced', agents: 1 }]);
    expect(second.changes).toEqual([{ change: 'adopted', agents: 1 }]);
  });
});

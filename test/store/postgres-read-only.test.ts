// The Postgres store opened read-only: leases already decide who runs what there, so read-only only
// means reading: no migration, no lease taken by a runtime on it, every write refused.
import { afterEach, describe, expect, it } from 'vitest';
import { ReadOnlyStoreError, StoreUnavailableError } from '../../src/core/errors.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { recordingLlm } from '../helpers/runtime.js';
import { freshSchema, postgresUrl, sql } from '../helpers/postgres.js';
import { checkpoint } from './store-contract.js';

const opened: PostgresStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

async function open(schema: string, readOnly = false): Promise<PostgresStore> {
  const store = await openPostgresStore(postgresUrl, { schema, readOnly, leaseMs: 5_000 });
  opened.push(store);
  return store;
}

const newAgent = (id: string) => ({ id, machine: 'agent', machineVersion: '1', input: { tasks: ['t1'] }, createdAt: new Date().toISOString() });

describe('a read-only Postgres store', () => {
  it('reads what the writers commit, refuses every write, and a runtime on it takes no lease and adopts nothing', async () => {
    const schema = freshSchema();
    const writer = await open(schema);
    await writer.createAgent(newAgent('a1')); // active, no owner alive: any runtime taking leases would adopt it
    const reader = await open(schema, true);
    expect(reader.readOnly).toBe(true);
    expect(await reader.getAgent('a1')).toMatchObject({ id: 'a1', status: 'active' });

    const writes: Promise<unknown>[] = [
      reader.createAgent(newAgent('a2')),
      reader.commit([checkpoint('a1', 1)]),
      reader.pruneHistory('a1', { keepNewest: 1 }, { parts: true }),
      reader.deleteEndedAgents({ endedBefore: new Date().toISOString(), limit: 10 }),
    ];
    for (const write of writes) await expect(write).rejects.toBeInstanceOf(ReadOnlyStoreError);

    const llm = recordingLlm();
    const runtime = await createRuntime({ store: reader, machines: [agentDefinition({ llm: llm.llm })] });
    opened.splice(opened.indexOf(reader), 1); // the runtime closes it
    try {
      expect(runtime.readOnly).toBe(true);
      expect(runtime.leaseKeeper).toBeUndefined();
      expect((await runtime.view('a1')).status).toBe('active');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(llm.calls).toHaveLength(0);
      expect(await sql('select id from processes', [], schema)).toEqual([]);
      expect(await sql('select owner from agents', [], schema)).toEqual([{ owner: writer.leases.processId }]);
    } finally {
      await runtime.close();
    }
  });

  it('migrates nothing: a schema without our tables is refused, and not created', async () => {
    const schema = freshSchema();
    const refused = await openPostgresStore(postgresUrl, { schema, readOnly: true }).catch((err: unknown) => err as Error);
    expect(refused).toBeInstanceOf(StoreUnavailableError);
    expect((refused as Error).message).toContain(`schema ${schema} holds no durable-agents tables`);
    expect(await sql('select 1 from information_schema.schemata where schema_name = $1', [schema])).toEqual([]);
  });
});

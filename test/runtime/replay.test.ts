import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startWebhookSink, type WebhookSink } from '../support/webhook-sink.js';
import { isIdleWithProgress, recordingLlm, startRuntime, waitForView, type TestRuntime } from '../helpers/runtime.js';
import { tempDbFile } from '../helpers/temp.js';

interface Fixture {
  machineVersion: string;
  agentId: string;
  checkpoints: { seq: number; eventType: string; state: unknown; snapshot?: unknown }[];
  actions: { seq: number; action: string; payload: unknown; result: unknown }[];
}

const fixture = JSON.parse(
  fs.readFileSync(path.join(import.meta.dirname, '../fixtures/agent.v1.persisted.json'), 'utf8'),
) as Fixture;

/** Writes the fixture's rows into a new SQLite file, as a process of that version would have. */
async function seedStore(webhook: string): Promise<string> {
  const file = tempDbFile();
  const store = await openSqliteStore(file);
  const createdAt = '2026-11-30T05:41:07.123Z';
  await store.createAgent({ id: fixture.agentId, machine: 'agent', machineVersion: fixture.machineVersion, input: {}, createdAt });
  const last = fixture.checkpoints.at(-1)!;
  const snapshot = JSON.stringify(last.snapshot).replaceAll('WEBHOOK', webhook);
  await store.commit(
    fixture.checkpoints.map((c) => ({
      kind: 'checkpoint' as const,
      agentId: fixture.agentId,
      seq: c.seq,
      inboxPosition: 0,
      createdAt,
      machineVersion: fixture.machineVersion,
      eventType: c.eventType,
      state: c.state,
      status: 'active' as const,
      progress: 0,
      snapshot: c === last ? snapshot : '{}',
      actions: fixture.actions.filter((a) => a.seq === c.seq),
    })),
  );
  await store.close();
  return file;
}

describe('replay of a stored checkpoint and action log', () => {
  let t: TestRuntime | undefined;
  let sink: WebhookSink | undefined;
  afterEach(async () => {
    await t?.runtime.close();
    await sink?.close();
  });

  it('finishes the task from its committed answer without calling the LLM, then runs the queued one', async () => {
    sink = await startWebhookSink();
    const file = await seedStore(sink.url);
    const llm = recordingLlm();
    t = await startRuntime({ file, llm: llm.llm });

    const view = await waitForView(t.runtime, 'replayed', isIdleWithProgress(2));
    expect(view.context).toMatchObject({ taken: 2, queue: [], current: null, answer: null, lastError: null });
    expect(llm.callsFor('Summarize the quarterly report')).toBe(0);
    expect(llm.callsFor('Extract the entities')).toBe(1);
    expect(sink.deliveries.map((d) => [d.idempotencyKey, d.body])).toEqual([
      ['replayed:1', { agentId: 'replayed', seq: 1, task: 'Summarize the quarterly report', response: 'Revenue grew 12% on the quarter.' }],
      ['replayed:2', { agentId: 'replayed', seq: 2, task: 'Extract the entities', response: 'answer to Extract the entities' }],
    ]);
    const log = await t.store.listActions('replayed');
    expect(log.map((a) => a.action)).toEqual(['callLlm', 'runSideEffect', 'callLlm', 'runSideEffect']);
    expect((await t.store.listCheckpoints('replayed')).map((c) => c.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });
});

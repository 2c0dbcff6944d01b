// A checkpoint of version 2 of the reference agent, taken while its LLM call was in flight, restores
// in version 3: the call is asked again with the same request (version 2's stored input read as
// messages), the task finishes with its result, and the queued task runs as a version 3 task.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentContext } from '../../src/agents/reference/types.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { isIdleWithProgress, recordingLlm, startRuntime, waitForView, type TestRuntime } from '../helpers/runtime.js';
import { tempDbFile } from '../helpers/temp.js';
import { startWebhookSink, type WebhookSink } from '../support/webhook-sink.js';

const fixture = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, '../fixtures/agent.v2.calling-llm.json'), 'utf8')) as {
  machineVersion: string;
  agentId: string;
  state: unknown;
  snapshot: unknown;
};

async function seedStore(webhook: string): Promise<string> {
  const file = tempDbFile();
  const store = await openSqliteStore(file);
  const createdAt = '2026-11-30T05:41:07.123Z';
  await store.createAgent({ id: fixture.agentId, machine: 'agent', machineVersion: fixture.machineVersion, input: {}, createdAt });
  await store.commit([
    {
      kind: 'checkpoint',
      agentId: fixture.agentId,
      seq: 1,
      inboxPosition: 0,
      createdAt,
      machineVersion: fixture.machineVersion,
      eventType: 'xstate.init',
      state: fixture.state,
      status: 'active',
      progress: 0,
      snapshot: JSON.stringify(fixture.snapshot).replaceAll('WEBHOOK', webhook),
      actions: [],
    },
  ]);
  await store.close();
  return file;
}

describe('a version 2 checkpoint restored by version 3', () => {
  let t: TestRuntime | undefined;
  let sink: WebhookSink | undefined;
  afterEach(async () => {
    await t?.runtime.close();
    await sink?.close();
  });

  it('asks the interrupted call again as messages, then finishes both tasks with their results', async () => {
    sink = await startWebhookSink();
    const llm = recordingLlm();
    t = await startRuntime({ file: await seedStore(sink.url), llm: llm.llm });
    const view = await waitForView(t.runtime, 'midcall', isIdleWithProgress(2));
    expect(llm.calls.map((c) => c.messages)).toEqual([
      [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Summarize the quarterly report' }],
      [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Extract the entities' }],
    ]);
    const context = view.context as AgentContext;
    expect(context.results.map((r) => [r.seq, r.task, r.response, r.turns])).toEqual([
      [1, 'Summarize the quarterly report', 'answer to Summarize the quarterly report', 1],
      [2, 'Extract the entities', 'answer to Extract the entities', 1],
    ]);
    expect(context).toMatchObject({ tools: [], maxTurns: 8, memory: 'task', usage: { llmCalls: 2 } });
    expect(sink.deliveries.map((d) => d.idempotencyKey)).toEqual(['midcall:1', 'midcall:2']);
    const [last] = await t.store.listCheckpoints('midcall', { newest: 1 });
    expect((await t.store.getCheckpoint('midcall', last!.seq))?.machineVersion).toBe('3');
  });
});

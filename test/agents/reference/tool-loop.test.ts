// The reference agent's tool loop end to end: the real `openai` client against the fake server,
// which answers with scripted tool calls and usage; HTTP tools on a real local tool server; a real
// SQLite file. Results, usage, keys and the messages of every request are asserted exactly.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentDefinition } from '../../../src/agents/reference/definition.js';
import { tool, type CodeTool } from '../../../src/agents/reference/tools.js';
import type { AgentContext } from '../../../src/agents/reference/types.js';
import { ConflictError } from '../../../src/core/errors.js';
import { createOpenAiClient } from '../../../src/llm/openai-client.js';
import type { AgentView } from '../../../src/runtime/views.js';
import { runtimesClosedAfterEach, waitForView, type TestRuntime } from '../../helpers/runtime.js';
import { startFakeOpenAI, type FakeOpenAI, type RecordedCall } from '../../support/fake-openai.js';
import { startToolServer, type ToolServer } from '../../support/tool-server.js';

let fake: FakeOpenAI;
let tools: ToolServer;
afterEach(async () => {
  await fake?.close();
  await tools?.close();
});
const startRuntime = runtimesClosedAfterEach();

async function start(options: { codeTools?: CodeTool[]; file?: string } = {}): Promise<TestRuntime> {
  fake ??= await startFakeOpenAI();
  tools ??= await startToolServer();
  const machines = [
    agentDefinition({ llm: createOpenAiClient({ baseURL: fake.url }), defaults: { baseDelayMs: 1, maxAttempts: 3 }, tools: options.codeTools ?? [] }),
  ];
  return startRuntime({ machines, ...(options.file ? { file: options.file } : {}) });
}

async function fresh() {
  fake = await startFakeOpenAI();
  tools = await startToolServer();
}

const usage = (prompt: number, completion: number) => ({ prompt_tokens: prompt, completion_tokens: completion });
const contextOf = (view: AgentView) => view.context as AgentContext;
const idleAfter = (n: number) => (view: AgentView) => view.state === 'idle' && view.progress === n;
const inFailed = (view: AgentView) => view.state === 'failed';
const waitingForApproval = (view: AgentView) => JSON.stringify(view.state) === JSON.stringify({ sideEffect: 'awaitingApproval' });
/** What a request sent after a tool round holds: the roles and the tool messages' ids and contents. */
const shape = (call: RecordedCall) =>
  call.rawMessages.map((m) => (m.role === 'tool' ? `tool(${String(m.tool_call_id)}): ${String(m.content)}` : `${m.role}${Array.isArray(m.tool_calls) ? `→${(m.tool_calls as { function: { name: string } }[]).map((c) => c.function.name).join('+')}` : ''}`));

describe('the tool loop, through the openai client', () => {
  it('runs one tool call, sends its result back, and records the final answer with exact usage', async () => {
    await fresh();
    const t = await start();
    fake.script(
      { toolCalls: [{ id: 'c1', name: 'weather', arguments: { city: 'Oslo' } }], usage: usage(20, 5) },
      { content: 'It is 3 °C in Oslo.', usage: usage(40, 8) },
    );
    tools.respond('weather', { kind: 'json', body: { celsius: 3 } });
    await t.runtime.spawn('agent', {
      id: 'w1',
      input: {
        system: 'Be brief.',
        tasks: ['Weather in Oslo?'],
        tools: [{ name: 'weather', description: 'The weather now', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, url: tools.url('weather') }],
      },
    });
    const view = await waitForView(t.runtime, 'w1', idleAfter(1));

    expect(fake.calls).toHaveLength(2);
    expect(fake.calls[0]!.tools).toEqual([
      { type: 'function', function: { name: 'weather', description: 'The weather now', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
    ]);
    expect(shape(fake.calls[1]!)).toEqual(['system', 'user', 'assistant→weather', 'tool(c1): {"celsius":3}']);
    expect(tools.deliveries.map((d) => [d.idempotencyKey, d.body])).toEqual([
      ['w1:1:c1', { agentId: 'w1', seq: 1, callId: 'c1', name: 'weather', arguments: { city: 'Oslo' } }],
    ]);
    expect(contextOf(view).results).toEqual([
      { seq: 1, task: 'Weather in Oslo?', response: 'It is 3 °C in Oslo.', usage: { promptTokens: 60, completionTokens: 13, totalTokens: 73, llmCalls: 2 }, turns: 2 },
    ]);
    expect(contextOf(view).usage).toEqual({ promptTokens: 60, completionTokens: 13, totalTokens: 73, llmCalls: 2 });
    // Each call's usage is in its action-log entry.
    const llmRows = (await t.runtime.actions('w1')).filter((a) => a.action === 'callLlm');
    expect(llmRows.map((a) => (a.result as { output: { usage: unknown } }).output.usage)).toEqual([
      { promptTokens: 20, completionTokens: 5, totalTokens: 25 },
      { promptTokens: 40, completionTokens: 8, totalTokens: 48 },
    ]);
  });

  it('runs two calls of one answer in parallel, each under its own key', async () => {
    await fresh();
    const t = await start();
    let inFlight = 0;
    let most = 0;
    tools.respond('slow', async (d) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 100));
      inFlight--;
      return { kind: 'text', body: `done ${String((d.body?.arguments as { n: number }).n)}` };
    });
    fake.script(
      { toolCalls: [{ id: 'a', name: 'slow', arguments: { n: 1 } }, { id: 'b', name: 'slow', arguments: { n: 2 } }] },
      { content: 'Both done.' },
    );
    await t.runtime.spawn('agent', { id: 'p1', input: { tasks: ['Do both'], tools: [{ name: 'slow', url: tools.url('slow') }] } });
    await waitForView(t.runtime, 'p1', idleAfter(1));
    expect(most).toBe(2);
    expect([...tools.byKey().keys()].sort()).toEqual(['p1:1:a', 'p1:1:b']);
    expect(shape(fake.calls[1]!).slice(-2)).toEqual(['tool(a): done 1', 'tool(b): done 2']);
  });

  it('feeds a tool 4xx, an unknown tool and bad arguments back to the model as errors, and goes on', async () => {
    await fresh();
    const t = await start();
    tools.respond('picky', { kind: 'status', status: 422, body: { problem: 'no such city' } });
    fake.script(
      {
        toolCalls: [
          { id: 'x1', name: 'picky', arguments: { city: 'Atlantis' } },
          { id: 'x2', name: 'nonexistent', arguments: {} },
          { id: 'x3', name: 'strict', arguments: '{"city": ' },
          { id: 'x4', name: 'strict', arguments: { city: 42 } },
        ],
      },
      { content: 'I could not find it.' },
    );
    const strictParams = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    await t.runtime.spawn('agent', {
      id: 'e1',
      input: { tasks: ['Find Atlantis'], tools: [{ name: 'picky', url: tools.url('picky') }, { name: 'strict', parameters: strictParams, url: tools.url('strict') }] },
    });
    const view = await waitForView(t.runtime, 'e1', idleAfter(1));
    const toolMessages = fake.calls[1]!.rawMessages.filter((m) => m.role === 'tool').map((m) => JSON.parse(String(m.content)) as { error: string; status?: number });
    expect(toolMessages[0]).toMatchObject({ error: 'The tool answered HTTP 422.', status: 422 });
    expect(toolMessages[1]!.error).toMatch(/no tool named "nonexistent"/);
    expect(toolMessages[2]!.error).toMatch(/not JSON/);
    expect(toolMessages[3]!.error).toMatch(/do not match the tool's parameters/);
    // Only the well-formed call to a known tool was delivered.
    expect(tools.deliveries.map((d) => d.idempotencyKey)).toEqual(['e1:1:x1']);
    expect(contextOf(view).results[0]!.response).toBe('I could not find it.');
  });

  it('retries a transient tool failure with the same key, and after exhausted retries `retry` sends the unfinished call again', async () => {
    await fresh();
    const t = await start();
    tools.enqueue('flaky', { kind: 'status', status: 503 }, { kind: 'status', status: 503 }, { kind: 'status', status: 503 });
    tools.respond('steady', { kind: 'json', body: 'fine' });
    fake.script(
      { toolCalls: [{ id: 'f', name: 'flaky', arguments: {} }, { id: 's', name: 'steady', arguments: {} }] },
      { content: 'Recovered.' },
    );
    await t.runtime.spawn('agent', { id: 'r1', input: { tasks: ['Try'], tools: [{ name: 'flaky', url: tools.url('flaky') }, { name: 'steady', url: tools.url('steady') }] } });
    const failed = await waitForView(t.runtime, 'r1', inFailed);
    expect(contextOf(failed).lastError).toMatchObject({ kind: 'transient', step: 'tool', code: 'tool_unavailable', attempts: 3 });
    // Three attempts of the flaky call; the steady one ran once (recorded, never asked again).
    expect(tools.deliveriesFor('r1:1:f')).toHaveLength(3);
    expect(tools.deliveriesFor('r1:1:s')).toHaveLength(1);
    await t.runtime.send('r1', { type: 'retry' });
    const view = await waitForView(t.runtime, 'r1', idleAfter(1));
    expect(tools.deliveriesFor('r1:1:f')).toHaveLength(4);
    expect(tools.deliveriesFor('r1:1:s')).toHaveLength(1);
    expect(tools.conflictingKeys()).toEqual([]);
    expect(fake.calls).toHaveLength(2); // the committed answer was never asked again
    expect(contextOf(view).results[0]!.response).toBe('Recovered.');
  });

  it('fails a task that uses more than maxTurns LLM calls, with turn_limit', async () => {
    await fresh();
    const t = await start();
    fake.setReplyPolicy(() => ({ toolCalls: [{ name: 'again', arguments: {} }] }));
    await t.runtime.spawn('agent', { id: 'm1', input: { tasks: ['Loop'], maxTurns: 3, tools: [{ name: 'again', url: tools.url('again') }] } });
    const view = await waitForView(t.runtime, 'm1', inFailed);
    expect(contextOf(view).lastError).toMatchObject({ kind: 'permanent', step: 'llm', code: 'turn_limit' });
    expect(fake.calls).toHaveLength(3);
    expect(tools.deliveries).toHaveLength(3);
  });

  it('waits for a person before a tool marked for approval: approved runs, rejected tells the model why', async () => {
    await fresh();
    const t = await start();
    fake.script(
      { toolCalls: [{ id: 'ok', name: 'pay', arguments: { amount: 5 } }, { id: 'no', name: 'pay', arguments: { amount: 500 } }] },
      { content: 'Paid 5, not 500.' },
    );
    await t.runtime.spawn('agent', { id: 'a1', input: { tasks: ['Pay both'], tools: [{ name: 'pay', url: tools.url('pay'), approval: true }] } });
    const waiting = await waitForView(t.runtime, 'a1', waitingForApproval);
    expect(contextOf(waiting).pendingApprovals).toEqual([
      { callId: 'ok', name: 'pay', arguments: { amount: 5 } },
      { callId: 'no', name: 'pay', arguments: { amount: 500 } },
    ]);
    await expect(t.runtime.send('a1', { type: 'tool.approve', callId: 'nope' })).rejects.toBeInstanceOf(ConflictError);
    await t.runtime.send('a1', { type: 'tool.approve', callId: 'ok' });
    await waitForView(t.runtime, 'a1', (v) => contextOf(v).pendingApprovals.length === 1);
    expect(tools.deliveries).toEqual([]); // nothing runs before every call is decided
    await t.runtime.send('a1', { type: 'tool.reject', callId: 'no', reason: 'Too much.' });
    await waitForView(t.runtime, 'a1', idleAfter(1));
    expect(tools.deliveries.map((d) => d.idempotencyKey)).toEqual(['a1:1:ok']);
    const rejected = fake.calls[1]!.rawMessages.find((m) => m.role === 'tool' && m.tool_call_id === 'no');
    expect(JSON.parse(String(rejected!.content))).toEqual({ error: 'A person rejected this call: Too much.', rejected: true });
  });

  it('keeps waiting for an approval across a restart, then runs the call once', async () => {
    await fresh();
    const first = await start();
    fake.script({ toolCalls: [{ id: 'w', name: 'deploy', arguments: { env: 'prod' } }] }, { content: 'Deployed.' });
    await first.runtime.spawn('agent', { id: 'd1', input: { tasks: ['Deploy'], tools: [{ name: 'deploy', url: tools.url('deploy'), approval: true }] } });
    await waitForView(first.runtime, 'd1', waitingForApproval);
    await first.runtime.close();
    const second = await start({ file: first.file });
    const restored = await second.runtime.view('d1');
    expect(waitingForApproval(restored)).toBe(true);
    await second.runtime.send('d1', { type: 'tool.approve', callId: 'w' });
    await waitForView(second.runtime, 'd1', idleAfter(1));
    expect(tools.deliveries.map((d) => d.idempotencyKey)).toEqual(['d1:1:w']);
    expect(fake.calls).toHaveLength(2);
  });

  it('with memory "conversation", each task is a user turn of one conversation', async () => {
    await fresh();
    const t = await start();
    await t.runtime.spawn('agent', { id: 'c1', input: { memory: 'conversation', system: 'sys', tasks: ['one', 'two', 'three'] } });
    const view = await waitForView(t.runtime, 'c1', idleAfter(3));
    expect(fake.calls.map((c) => c.rawMessages.map((m) => `${m.role}:${String(m.content)}`))).toEqual([
      ['system:sys', 'user:one'],
      ['system:sys', 'user:one', `assistant:${String(fake.calls[0]!.response!.message.content)}`, 'user:two'],
      [
        'system:sys',
        'user:one',
        `assistant:${String(fake.calls[0]!.response!.message.content)}`,
        'user:two',
        `assistant:${String(fake.calls[1]!.response!.message.content)}`,
        'user:three',
      ],
    ]);
    expect(contextOf(view).results.map((r) => [r.seq, r.task, r.turns])).toEqual([[1, 'one', 1], [2, 'two', 1], [3, 'three', 1]]);
  });

  it('carries a tool result of 3 MB through the loop and stores it once, not once per later checkpoint', async () => {
    await fresh();
    const big = JSON.stringify({ rows: Array.from({ length: 100_000 }, (_, i) => ({ id: i, text: `row ${i} of the export` })) });
    expect(big.length).toBeGreaterThan(3_000_000);
    const report = tool({ name: 'export_rows', parameters: z.object({}), execute: () => big });
    const t = await start({ codeTools: [report] });
    fake.script({ toolCalls: [{ id: 'x', name: 'export_rows', arguments: {} }] }, { content: 'Exported.' });
    await t.runtime.spawn('agent', { id: 'big1', input: { tasks: ['export the rows', 'and say hello'] } });
    await waitForView(t.runtime, 'big1', idleAfter(2));
    // The model got the whole result back.
    expect(shape(fake.calls[1]!).at(-1)!.length).toBeGreaterThan(3_000_000);
    const db = t.store.db;
    const checkpoints = db.prepare(`select count(*) as n, max(length(snapshot)) as largest from checkpoints where agent_id = 'big1'`).get() as { n: number; largest: number };
    expect(checkpoints.n).toBeGreaterThan(8);
    // Every checkpoint after the tool ran holds the result, by reference only.
    expect(checkpoints.largest).toBeLessThan(10_000);
    const parts = db.prepare(`select count(*) as n, sum(length(body)) as bytes from snapshot_parts where agent_id = 'big1' and length(body) > 1000000`).get() as { n: number; bytes: number };
    expect(parts.n).toBe(1);
    const total = db.prepare(`select sum(length(body)) from snapshot_parts where agent_id = 'big1'`).pluck().get() as number;
    const rest = (db.prepare(`select coalesce(sum(length(result)), 0) + coalesce(sum(length(payload)), 0) from actions where agent_id = 'big1'`).pluck().get() as number)
      + (db.prepare(`select coalesce(sum(length(result)), 0) from effects where agent_id = 'big1'`).pluck().get() as number);
    expect(total + rest).toBeLessThan(1.2 * parts.bytes);
    // And it reads back whole: the checkpoint after the tool round, through the runtime.
    const afterTools = (await t.runtime.checkpoints('big1')).find((c) => JSON.stringify(c.state) === JSON.stringify({ callingLLM: 'requesting' }) && c.seq > 3)!;
    const { snapshot } = await t.runtime.checkpoint('big1', afterTools.seq);
    const toolMessage = (snapshot.context as AgentContext).messages.find((m) => m.role === 'tool');
    expect(toolMessage?.content).toBe(big);
  });

  it('offers tools registered in code, validated by their zod parameters, with the call key', async () => {
    await fresh();
    const seen: unknown[] = [];
    const add = tool({
      name: 'add',
      description: 'Adds two numbers',
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }, { idempotencyKey }) => (seen.push(idempotencyKey), { sum: a + b }),
    });
    const t = await start({ codeTools: [add] });
    fake.script({ toolCalls: [{ id: 'k', name: 'add', arguments: { a: 2, b: 3 } }] }, { content: '5' });
    await t.runtime.spawn('agent', { id: 'z1', input: { tasks: ['2+3'] } });
    await waitForView(t.runtime, 'z1', idleAfter(1));
    expect(fake.calls[0]!.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'add',
          description: 'Adds two numbers',
          parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'], additionalProperties: false },
        },
      },
    ]);
    expect(seen).toEqual(['z1:1:k']);
    expect(shape(fake.calls[1]!).at(-1)).toBe('tool(k): {"sum":5}');
    // An HTTP tool may not shadow it.
    await expect(t.runtime.spawn('agent', { id: 'z2', input: { tools: [{ name: 'add', url: tools.url('add') }] } })).rejects.toThrow(/registered on the server/);
  });
});

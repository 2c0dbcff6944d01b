// MCP tool calls in /metrics and traces, from a real run: the reference agent through the real
// `openai` client against the fake server, offered the tools of the MCP reference server
// (server-everything, stdio) beside an HTTP tool, on a real SQLite file. The MCP call's span and
// counter carry the server and the tool's own name; the HTTP tool's carry neither.
import path from 'node:path';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import { createMcpServers, type McpServerPool } from '../../src/mcp/servers.js';
import { combineObservers } from '../../src/observability/combine-observers.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { createTracingObserver, SPAN } from '../../src/observability/tracing.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ROOT } from '../helpers/server-process.js';
import { runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';
import { tempDbFile } from '../helpers/temp.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { startToolServer, type ToolServer } from '../support/tool-server.js';
import { parsePrometheus, valueOf } from './prom-text.js';

const EVERYTHING = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

let fake: FakeOpenAI | undefined;
let tools: ToolServer | undefined;
let mcp: McpServerPool | undefined;
afterEach(async () => {
  await fake?.close();
  await tools?.close();
  await mcp?.close();
  fake = tools = mcp = undefined;
});
// Registered after the hook above, so it runs before it: the runtimes close before the servers they call.
const startRuntime = runtimesClosedAfterEach();

describe('MCP tool calls, through the openai client and a real MCP server', () => {
  it('count by server and tool, and put mcp.server and mcp.tool on their spans', async () => {
    fake = await startFakeOpenAI();
    tools = await startToolServer();
    mcp = createMcpServers({ everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] } });
    const metrics = createMetrics();
    const exporter = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('test');
    const store = await openSqliteStore(tempDbFile());
    const { runtime } = await startRuntime({
      store,
      machines: [agentDefinition({ llm: createOpenAiClient({ baseURL: fake.url }), defaults: { baseDelayMs: 1, maxAttempts: 3 }, mcp })],
      observer: combineObservers(metrics.observer, createTracingObserver(tracer, { effects: store })),
    });
    fake.script(
      {
        toolCalls: [
          { id: 'c1', name: 'everything__echo', arguments: { message: 'hi' } },
          { id: 'c2', name: 'weather', arguments: { city: 'Oslo' } },
          { id: 'c3', name: 'everything__get-sum', arguments: { a: 'not a number', b: 2 } },
        ],
      },
      { content: 'Done.' },
    );
    tools.respond('weather', { kind: 'json', body: { celsius: 3 } });
    await runtime.spawn('agent', { id: 'm1', input: { tasks: ['Echo hi'], tools: [{ name: 'weather', url: tools.url('weather') }], mcp: ['everything'] } });
    await waitForView(runtime, 'm1', (v) => v.state === 'idle' && v.progress === 1);

    // The model was offered the server's tools under <server>__<tool>, beside the HTTP tool.
    const offered = (fake.calls[0]!.tools as { function: { name: string } }[]).map((t) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(['weather', 'everything__echo', 'everything__get-sum']));

    const samples = parsePrometheus(await metrics.render());
    const mcpCalls = samples.filter((s) => s.name === 'durable_agents_mcp_tool_calls_total');
    // echo answered; get-sum's arguments did not match its schema: an error told to the model, counted as one.
    expect(mcpCalls).toEqual(
      expect.arrayContaining([
        { name: 'durable_agents_mcp_tool_calls_total', labels: { machine: 'agent', server: 'everything', tool: 'echo', outcome: 'ok' }, value: 1 },
        { name: 'durable_agents_mcp_tool_calls_total', labels: { machine: 'agent', server: 'everything', tool: 'echo', outcome: 'error' }, value: 0 },
        { name: 'durable_agents_mcp_tool_calls_total', labels: { machine: 'agent', server: 'everything', tool: 'get-sum', outcome: 'error' }, value: 1 },
      ]),
    );
    // Only the MCP tools: the HTTP tool is in durable_agents_tool_calls_total alone.
    expect(mcpCalls.map((s) => s.labels.tool).sort()).toEqual(['echo', 'echo', 'get-sum', 'get-sum']);
    expect(valueOf(samples, 'durable_agents_tool_calls_total', { machine: 'agent', tool: 'everything__echo', outcome: 'ok' })).toBe(1);
    expect(valueOf(samples, 'durable_agents_tool_calls_total', { machine: 'agent', tool: 'weather', outcome: 'ok' })).toBe(1);

    const spans = exporter.getFinishedSpans().filter((s) => s.name === SPAN.toolCall);
    const byCall = Object.fromEntries(spans.map((s) => [s.attributes['gen_ai.tool.call.id'], s.attributes]));
    expect(byCall.c1).toMatchObject({ 'gen_ai.tool.name': 'everything__echo', 'mcp.server': 'everything', 'mcp.tool': 'echo', 'agent.outcome': 'ok', 'agent.idempotency_key': 'm1:1:c1' });
    expect(byCall.c3).toMatchObject({ 'gen_ai.tool.name': 'everything__get-sum', 'mcp.server': 'everything', 'mcp.tool': 'get-sum', 'agent.outcome': 'error' });
    expect(byCall.c2).toMatchObject({ 'gen_ai.tool.name': 'weather', 'agent.outcome': 'ok' });
    expect(byCall.c2).not.toHaveProperty('mcp.server');
    expect(byCall.c2).not.toHaveProperty('mcp.tool');
  }, 60_000);
});

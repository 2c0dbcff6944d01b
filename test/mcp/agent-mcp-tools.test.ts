// The reference agent with MCP tools, end to end: the real `openai` client against the fake server,
// scripted to call `<server>__<tool>`; real MCP servers from node_modules (server-everything over
// stdio and streamable HTTP, server-filesystem on a temp folder) and, where only it can show what
// is asserted (a call's `_meta`, a call that waits, a tool list that changes), a tiny in-test
// server; a real SQLite file, closed and reopened, or crashed.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import type { AgentContext, ToolResult } from '../../src/agents/reference/types.js';
import { InvalidInputError } from '../../src/core/errors.js';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import { createMcpServers, type McpServerPool } from '../../src/mcp/servers.js';
import type { McpServerConfig } from '../../src/mcp/types.js';
import type { AgentView } from '../../src/runtime/views.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { crashableStore } from '../../src/testing/index.js';
import { tempDbFile, tempDir } from '../helpers/temp.js';
import { startFakeOpenAI, type FakeOpenAI, type RecordedCall } from '../support/fake-openai.js';
import { everythingStdio, filesystemStdio, startEverythingHttp } from '../support/mcp-servers.js';
import { startTestMcpServer, type TestMcpServer } from '../support/mcp-test-server.js';
import { runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';

// Registered before runtimesClosedAfterEach: after-hooks run as a stack, so these run after the runtimes closed.
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const startRuntime = runtimesClosedAfterEach();

async function fakeLlm(): Promise<FakeOpenAI> {
  const fake = await startFakeOpenAI();
  cleanups.push(() => fake.close());
  return fake;
}
function pool(configs: Record<string, McpServerConfig>): McpServerPool {
  const servers = createMcpServers(configs);
  cleanups.push(() => servers.close());
  return servers;
}
async function testServer(...args: Parameters<typeof startTestMcpServer>): Promise<TestMcpServer> {
  const server = await startTestMcpServer(...args);
  cleanups.push(() => server.close());
  return server;
}
/** A runtime running the reference agent with these MCP servers (none: an agent definition without `mcp`). */
function start(fake: FakeOpenAI, mcp: McpServerPool | undefined, options: { file?: string; store?: Awaited<ReturnType<typeof openSqliteStore>> } = {}) {
  const machines = [agentDefinition({ llm: createOpenAiClient({ baseURL: fake.url }), defaults: { baseDelayMs: 1, maxAttempts: 3 }, ...(mcp ? { mcp } : {}) })];
  return startRuntime({ machines, ...options });
}

const contextOf = (view: AgentView) => view.context as AgentContext;
const idleAfter = (n: number) => (view: AgentView) => view.state === 'idle' && view.progress === n;
const waitingForApproval = (view: AgentView) => JSON.stringify(view.state) === JSON.stringify({ sideEffect: 'awaitingApproval' });
const runningTools = (view: AgentView) => JSON.stringify(view.state) === JSON.stringify({ sideEffect: 'runningTools' });
const offered = (call: RecordedCall) => (call.tools ?? []).map((t) => (t as { function: { name: string } }).function.name);
const toolMessages = (call: RecordedCall) => call.rawMessages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m.content]);
const toolResults = async (t: Awaited<ReturnType<typeof start>>, id: string) =>
  (await t.runtime.actions(id)).filter((a) => a.action === 'runTools').map((a) => (a.result as { output?: ToolResult[] }).output);

describe('MCP tools in the reference agent', () => {
  it.each(['stdio', 'streamable HTTP'])('offers server-everything\'s tools as <server>__<tool> (over %s) and sends a call\'s result back', async (transport) => {
    const fake = await fakeLlm();
    let config: McpServerConfig = everythingStdio();
    if (transport !== 'stdio') {
      const http = await startEverythingHttp();
      cleanups.push(() => http.close());
      config = { url: http.url };
    }
    const t = await start(fake, pool({ everything: config }));
    fake.script({ toolCalls: [{ id: 'c1', name: 'everything__get-sum', arguments: { a: 2, b: 40 } }] }, { content: 'It is 42.' });
    await t.runtime.spawn('agent', { id: 'm1', input: { tasks: ['What is 2 + 40?'], mcp: ['everything'] } });
    const view = await waitForView(t.runtime, 'm1', idleAfter(1), 15_000);

    expect(offered(fake.calls[0]!)).toEqual(expect.arrayContaining(['everything__echo', 'everything__get-sum', 'everything__get-tiny-image']));
    expect((fake.calls[0]!.tools as { function: { name: string; parameters: unknown } }[]).find((d) => d.function.name === 'everything__get-sum')!.function.parameters).toEqual({
      type: 'object',
      properties: { a: { type: 'number', description: 'First number' }, b: { type: 'number', description: 'Second number' } },
      required: ['a', 'b'],
    });
    // The second call offers the list the first one recorded.
    expect(fake.calls[1]!.tools).toEqual(fake.calls[0]!.tools);
    expect(toolMessages(fake.calls[1]!)).toEqual([['c1', 'The sum of 2 and 40 is 42.']]);
    expect(contextOf(view).results.map((r) => r.response)).toEqual(['It is 42.']);
    // The list belonged to the task: it ended with it.
    expect(contextOf(view).mcpTools).toBeNull();
    expect(contextOf(view).mcp).toEqual(['everything']);
  });

  it('runs the calls of one answer in parallel, each with its own key in _meta', async () => {
    const fake = await fakeLlm();
    // Each call answers only once both are in: run one after the other, they would time out.
    const server = await testServer([
      {
        name: 'wait_for_both',
        answer: async ({ text }) => {
          const deadline = Date.now() + 3_000;
          while (server.calls.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
          if (server.calls.length < 2) throw new Error('the other call never came');
          return `done ${String(text)}`;
        },
      },
    ]);
    const t = await start(fake, pool({ t: { url: server.url } }));
    fake.script(
      { toolCalls: [{ id: 'a', name: 't__wait_for_both', arguments: { text: 'one' } }, { id: 'b', name: 't__wait_for_both', arguments: { text: 'two' } }] },
      { content: 'Both done.' },
    );
    await t.runtime.spawn('agent', { id: 'par', input: { tasks: ['Do both.'], mcp: ['t'] } });
    await waitForView(t.runtime, 'par', idleAfter(1), 15_000);
    expect(toolMessages(fake.calls[1]!)).toEqual([['a', 'done one'], ['b', 'done two']]);
    expect(server.calls.map((c) => c.key).sort()).toEqual(['par:1:a', 'par:1:b']);
  });

  it('runs at most the server\'s concurrency of its calls at once, for all agents together, and the others in turn', async () => {
    const fake = await fakeLlm();
    let running = 0;
    let peak = 0;
    const hold = async (args: Record<string, unknown>) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((resolve) => setTimeout(resolve, 60));
      running--;
      return `done ${String(args.text)}`;
    };
    const server = await testServer([{ name: 'slow', answer: hold }, { name: 'other', answer: hold }]);
    const t = await start(fake, pool({ t: { url: server.url, concurrency: 2 } }));
    // Two agents, three calls each (of two tools of the one server): six calls, two at a time.
    const answer = (agent: string) => ({
      toolCalls: ['1', '2', '3'].map((n) => ({ id: `${agent}${n}`, name: n === '3' ? 't__other' : 't__slow', arguments: { text: `${agent}${n}` } })),
    });
    fake.script(answer('a'), answer('b'), { content: 'Done.' }, { content: 'Done.' });
    await Promise.all(['a', 'b'].map((id) => t.runtime.spawn('agent', { id, input: { tasks: ['Call them.'], mcp: ['t'] } })));
    await Promise.all(['a', 'b'].map((id) => waitForView(t.runtime, id, idleAfter(1), 15_000)));
    expect(server.calls).toHaveLength(6);
    expect(peak).toBe(2);
    // Which agent got which scripted answer depends on whose LLM call came first: every call answered once.
    const results = (await Promise.all(['a', 'b'].map((id) => toolResults(t, id)))).flat(2).map((r) => r!.content);
    expect(results.sort()).toEqual(['a1', 'a2', 'a3', 'b1', 'b2', 'b3'].map((n) => `done ${n}`));
  });

  it('tells the model an isError result (a file that is not there) and goes on', async () => {
    const fake = await fakeLlm();
    const folder = tempDir('mcp-agent-fs-');
    const t = await start(fake, pool({ files: filesystemStdio(folder) }));
    const missing = path.join(folder, 'missing.txt');
    fake.script({ toolCalls: [{ id: 'r', name: 'files__read_text_file', arguments: { path: missing } }] }, { content: 'There is no such file.' });
    await t.runtime.spawn('agent', { id: 'err', input: { tasks: ['Read missing.txt'], mcp: ['files'] } });
    await waitForView(t.runtime, 'err', idleAfter(1), 15_000);
    const result = (await toolResults(t, 'err'))[0]![0];
    expect(result).toMatchObject({ callId: 'r', name: 'files__read_text_file', ok: false });
    expect(result!.content).toContain('ENOENT');
    expect(toolMessages(fake.calls[1]!)).toEqual([['r', result!.content]]);
  });

  it('waits for a person before a destructive call, across a restart, and runs it once when approved', async () => {
    const fake = await fakeLlm();
    const folder = tempDir('mcp-agent-fs-');
    const target = path.join(folder, 'note.txt');
    const file = tempDbFile();
    const first = await start(fake, pool({ files: filesystemStdio(folder) }), { file });
    fake.script({ toolCalls: [{ id: 'w', name: 'files__write_file', arguments: { path: target, content: 'approved text' } }] }, { content: 'Written.' });
    await first.runtime.spawn('agent', { id: 'wr', input: { tasks: ['Write the note'], mcp: ['files'] } });
    const waiting = await waitForView(first.runtime, 'wr', waitingForApproval, 15_000);
    expect(contextOf(waiting).pendingApprovals).toEqual([{ callId: 'w', name: 'files__write_file', arguments: { path: target, content: 'approved text' } }]);
    expect(contextOf(waiting).mcpTools?.find((s) => s.name === 'files__write_file')).toMatchObject({ approval: true, mcp: { server: 'files', tool: 'write_file' } });
    await first.runtime.close();
    expect(fs.existsSync(target)).toBe(false);

    // Another process, its own connections; the agent waits where it was.
    const second = await start(fake, pool({ files: filesystemStdio(folder) }), { file });
    await waitForView(second.runtime, 'wr', waitingForApproval);
    await second.runtime.send('wr', { type: 'tool.approve', callId: 'w' });
    await waitForView(second.runtime, 'wr', idleAfter(1), 15_000);
    expect(fs.readFileSync(target, 'utf8')).toBe('approved text');
    expect(await toolResults(second, 'wr')).toEqual([[{ callId: 'w', name: 'files__write_file', ok: true, content: expect.stringContaining('Successfully wrote') }]]);
    expect(fake.calls).toHaveLength(2);
    expect(fake.calls[1]!.tools).toEqual(fake.calls[0]!.tools);
  });

  it('after a crash during a call, sends the call again with the same key in _meta, and asks the model nothing twice', async () => {
    const fake = await fakeLlm();
    let hang = true;
    let released!: () => void;
    const release = new Promise<void>((resolve) => (released = resolve));
    cleanups.push(async () => released());
    const server = await testServer([{ name: 'charge', answer: async ({ text }) => (hang ? (await release, 'too late') : `charged ${String(text)}`) }]);
    const file = tempDbFile();
    const crashable = crashableStore(await openSqliteStore(file));
    const first = await start(fake, pool({ pay: { url: server.url } }), { store: crashable.store as never });
    fake.script({ toolCalls: [{ id: 'c', name: 'pay__charge', arguments: { text: '5 EUR' } }] }, { content: 'Charged.' });
    await first.runtime.spawn('agent', { id: 'cr', input: { tasks: ['Charge 5 EUR'], mcp: ['pay'] } });
    await waitForView(first.runtime, 'cr', runningTools, 15_000);
    await expect.poll(() => server.calls.length, { timeout: 10_000 }).toBe(1);
    crashable.crash();
    await first.runtime.close().catch(() => undefined);
    hang = false;

    const second = await start(fake, pool({ pay: { url: server.url } }), { file });
    const view = await waitForView(second.runtime, 'cr', idleAfter(1), 15_000);
    expect(server.calls.map((c) => [c.tool, c.args, c.key])).toEqual([
      ['charge', { text: '5 EUR' }, 'cr:1:c'],
      ['charge', { text: '5 EUR' }, 'cr:1:c'],
    ]);
    // One LLM call for the answer that asked for the charge (committed before the crash), one after its result.
    expect(fake.calls).toHaveLength(2);
    expect(toolMessages(fake.calls[1]!)).toEqual([['c', 'charged 5 EUR']]);
    expect(contextOf(view).results.map((r) => r.response)).toEqual(['Charged.']);
  });

  it('retries a call whose stdio server died mid-call, and has it answered by the restarted server', async () => {
    const fake = await fakeLlm();
    const servers = pool({ everything: everythingStdio() });
    const t = await start(fake, servers);
    fake.script({ toolCalls: [{ id: 'l', name: 'everything__trigger-long-running-operation', arguments: { duration: 2, steps: 1 } }] }, { content: 'It finished.' });
    await t.runtime.spawn('agent', { id: 'kill', input: { tasks: ['Run the long operation'], mcp: ['everything'] } });
    await waitForView(t.runtime, 'kill', runningTools, 15_000);
    const pid = servers.pid('everything')!;
    await new Promise((resolve) => setTimeout(resolve, 150));
    process.kill(pid, 'SIGKILL');
    await waitForView(t.runtime, 'kill', idleAfter(1), 15_000);
    const attempts = (await t.runtime.actions('kill')).filter((a) => a.action === 'runTools');
    expect(attempts.map((a) => (a.result as { ok: boolean }).ok)).toEqual([false, true]);
    expect(JSON.stringify(attempts[0]!.result)).toContain('mcp_unreachable');
    expect(servers.connections('everything')).toBe(2);
    expect(servers.pid('everything')).not.toBe(pid);
    expect(toolMessages(fake.calls[1]!)).toEqual([['l', expect.stringContaining('Long running operation completed')]]);
  });

  it.each([
    { change: 'the server no longer offers the tool', error: 'The MCP server "t" no longer offers the tool "erase".' },
    { change: 'the server is no longer configured', error: 'The MCP server "t" is not configured here any more.' },
  ])('offers a restored agent the list its task recorded; when $change, the call is an error result', async ({ change, error }) => {
    const fake = await fakeLlm();
    const server = await testServer([{ name: 'erase', destructive: true }, { name: 'look' }]);
    const file = tempDbFile();
    const first = await start(fake, pool({ t: { url: server.url } }), { file });
    fake.script({ toolCalls: [{ id: 'e', name: 't__erase', arguments: { text: 'all' } }] }, { content: 'Could not erase.' });
    await first.runtime.spawn('agent', { id: 'rec', input: { tasks: ['Erase everything'], mcp: ['t'] } });
    await waitForView(first.runtime, 'rec', waitingForApproval, 15_000);
    await first.runtime.close();

    server.tools = [{ name: 'look' }, { name: 'added' }];
    const removed = change.includes('configured');
    const second = await start(fake, removed ? undefined : pool({ t: { url: server.url } }), { file });
    await second.runtime.send('rec', { type: 'tool.approve', callId: 'e' });
    await waitForView(second.runtime, 'rec', idleAfter(1), 15_000);
    expect(offered(fake.calls[0]!)).toEqual(['t__erase', 't__look']);
    expect(fake.calls[1]!.tools).toEqual(fake.calls[0]!.tools);
    expect(toolMessages(fake.calls[1]!)).toEqual([['e', JSON.stringify({ error })]]);
    expect(server.calls).toEqual([]);
  });

  it('lists again for the next task: a task offers the tools its server has when it starts', async () => {
    const fake = await fakeLlm();
    const server = await testServer([{ name: 'one' }]);
    // A stateless test server sends no list_changed: each task gets a new pool to see the change.
    const file = tempDbFile();
    const first = await start(fake, pool({ t: { url: server.url } }), { file });
    fake.script({ content: 'First.' });
    await first.runtime.spawn('agent', { id: 'next', input: { tasks: ['First task'], mcp: ['t'] } });
    await waitForView(first.runtime, 'next', idleAfter(1), 15_000);
    await first.runtime.close();
    server.tools = [{ name: 'one' }, { name: 'two' }];
    const second = await start(fake, pool({ t: { url: server.url } }), { file });
    fake.script({ content: 'Second.' });
    await second.runtime.send('next', { type: 'task.add', task: 'Second task' });
    await waitForView(second.runtime, 'next', idleAfter(2), 15_000);
    expect([offered(fake.calls[0]!), offered(fake.calls[1]!)]).toEqual([['t__one'], ['t__one', 't__two']]);
  });

  it('fails the tool step transiently when the server cannot be reached, then parks in failed with lastError.step "tool"', async () => {
    const fake = await fakeLlm();
    const server = await testServer([{ name: 'ping', destructive: true }]);
    const t = await start(fake, pool({ t: { url: server.url } }));
    fake.script({ toolCalls: [{ id: 'p', name: 't__ping', arguments: { text: 'x' } }] });
    await t.runtime.spawn('agent', { id: 'down', input: { tasks: ['Ping'], mcp: ['t'], retry: { maxAttempts: 2, baseDelayMs: 1 } } });
    // The answer is in (its call waits for a person); the server goes away before the call.
    await waitForView(t.runtime, 'down', waitingForApproval, 15_000);
    await server.close();
    await t.runtime.send('down', { type: 'tool.approve', callId: 'p' });
    const view = await waitForView(t.runtime, 'down', (v) => v.state === 'failed', 15_000);
    expect(contextOf(view).lastError).toMatchObject({ kind: 'transient', step: 'tool', code: 'mcp_unreachable', attempts: 2 });
  });

  it('fails the tool step when the servers cannot be listed for a task\'s first call, and retry lists them again before asking the LLM', async () => {
    const fake = await fakeLlm();
    const t = await start(fake, pool({ t: { url: 'http://127.0.0.1:9/mcp' } }));
    await t.runtime.spawn('agent', { id: 'nolist', input: { tasks: ['Anything'], mcp: ['t'], retry: { maxAttempts: 2, baseDelayMs: 5 } } });
    const view = await waitForView(t.runtime, 'nolist', (v) => v.state === 'failed', 15_000);
    expect(contextOf(view).lastError).toMatchObject({ kind: 'transient', step: 'tool', code: 'mcp_unreachable', attempts: 2 });
    expect(fake.calls).toHaveLength(0);
    // retry goes back to the LLM call (there is no answer to act on), which lists the servers first: still unreachable.
    await t.runtime.send('nolist', { type: 'retry' });
    const again = await waitForView(t.runtime, 'nolist', (v) => v.state === 'failed' && v.updatedAt !== view.updatedAt, 15_000);
    expect(contextOf(again).lastError).toMatchObject({ step: 'tool', code: 'mcp_unreachable', attempts: 2 });
    expect(fake.calls).toHaveLength(0);
  });

  it('parks an agent at once when its OAuth server is refused (a wrong secret: permanent, no retries), and finishes once the config is mended', async () => {
    const fake = await fakeLlm();
    const client = { clientId: 'agents', clientSecret: 'right' };
    const server = await testServer([{ name: 'lookup' }], { oauth: client });
    const file = tempDbFile();
    const wrong = await start(fake, pool({ crm: { url: server.url, oauth: { ...client, clientSecret: 'wrong', issuer: server.oauth!.issuer } } }), { file });
    await wrong.runtime.spawn('agent', { id: 'authz', input: { tasks: ['Look it up'], mcp: ['crm'], retry: { maxAttempts: 5, baseDelayMs: 5 } } });
    const parked = await waitForView(wrong.runtime, 'authz', (v) => v.state === 'failed', 15_000);
    expect(contextOf(parked).lastError).toMatchObject({ kind: 'permanent', step: 'tool', code: 'mcp_unauthorized', attempts: 1 });
    expect(fake.calls).toHaveLength(0);
    await wrong.runtime.close();

    // The config mended (a restart with the right secret), a person's retry: listed, called, done.
    fake.setReplyPolicy((c: RecordedCall) => (c.rawMessages.at(-1)?.role === 'tool' ? { content: 'found' } : { toolCalls: [{ name: 'crm__lookup', arguments: { text: 'a' } }] }));
    const mended = await start(fake, pool({ crm: { url: server.url, oauth: { ...client, issuer: server.oauth!.issuer } } }), { file });
    await mended.runtime.send('authz', { type: 'retry' });
    await waitForView(mended.runtime, 'authz', idleAfter(1), 15_000);
    expect(server.calls.map((c) => c.tool)).toEqual(['lookup']);
    expect(server.oauth!.tokenRequests.at(-1)).toEqual({ clientId: 'agents', granted: true });
  });

  it('refuses a spawn naming an MCP server not configured here, or a name that is not one', async () => {
    const fake = await fakeLlm();
    const t = await start(fake, pool({ files: { command: 'unused' } }));
    const refusal = (input: unknown) => t.runtime.spawn('agent', { id: 'bad', input }).then(() => undefined, (e: unknown) => e);
    const unknown = await refusal({ tasks: ['x'], mcp: ['files', 'shell'] });
    expect(unknown).toBeInstanceOf(InvalidInputError);
    expect((unknown as Error).message).toContain('"shell" is not an MCP server configured here (configured: files)');
    expect(await refusal({ tasks: ['x'], mcp: ['a__b'] })).toBeInstanceOf(InvalidInputError);
    expect(await refusal({ tasks: ['x'], mcp: ['files', 'files'] })).toBeInstanceOf(InvalidInputError);
    const none = await start(fake, undefined);
    const noneConfigured = await none.runtime.spawn('agent', { id: 'bad2', input: { mcp: ['files'] } }).catch((e: unknown) => e);
    expect((noneConfigured as Error).message).toContain('"files" is not an MCP server configured here (none is configured)');
  });
});

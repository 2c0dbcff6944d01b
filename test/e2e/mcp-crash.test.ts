/**
 * MCP tools through real `serve` processes: `--mcp fs=node <mcp-log-proxy> … -- node
 * <server-filesystem> <dir>` (the MCP reference filesystem server, behind a proxy that logs every
 * `tools/call` it receives and can hold one), agents spawned over HTTP with `"mcp": ["fs"]`, the
 * fake OpenAI server (here, so its records survive the kills) asking for `fs__write_file`, which
 * the server marks destructive: it waits for a person's approval.
 *
 * - SIGKILL while the approval waits: after the restart the agent still waits, nothing was written,
 *   no LLM turn is asked again; approved over HTTP, the file is written once, by one call.
 * - SIGKILL while the call is on its way to the server (held by the proxy): after the restart the
 *   call is sent again with the same key (in `_meta`), the file is written once.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI, type RecordedCall } from '../support/fake-openai.js';
import { api, killAllServers, parseLine, ROOT, startServer, waitForAgent, type ServerProcess } from '../helpers/server-process.js';
import { tempDbFile, tempDir } from '../helpers/temp.js';

const FS_SERVER = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const PROXY = path.join(ROOT, 'test/support/mcp-log-proxy.mjs');

interface Logged {
  event: 'received' | 'forwarded';
  name: string;
  key: string | null;
}

let llm: FakeOpenAI;
const files = tempDir('mcp-files-');
const work = tempDir('mcp-e2e-');
const log = path.join(work, 'calls.jsonl');
const hold = path.join(work, 'hold');
const db = tempDbFile();
// One command line, split on whitespace by --mcp: none of these paths has a space.
const mcpFlag = `fs=${process.execPath} ${PROXY} ${log} ${hold} -- ${process.execPath} ${FS_SERVER} ${files}`;

/** What each task asks: a note written by the tool, then a text answer once the tool's result is back. */
const NOTES: Record<string, { callId: string; file: string; content: string }> = {
  'Write note A': { callId: 'call_a', file: 'a.txt', content: 'alpha' },
  'Write note B': { callId: 'call_b', file: 'b.txt', content: 'beta' },
};

const logged = (): Logged[] => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Logged) : []);
const start = () => startServer({ store: ['--db', db], llmUrl: llm.url, extra: ['--mcp', mcpFlag, '--log-level', 'debug'] });
const turnsOf = (task: string) => llm.callsFor(task).filter((c) => c.outcome === 'ok');

async function kill(server: ServerProcess): Promise<void> {
  server.child.kill('SIGKILL');
  await server.exit;
}

beforeAll(async () => {
  llm = await startFakeOpenAI();
  llm.setReplyPolicy((call: RecordedCall) => {
    const note = NOTES[call.userContent];
    if (!note) return undefined;
    if (call.rawMessages.at(-1)?.role === 'tool') return { content: `Wrote ${note.file}.` };
    return { toolCalls: [{ id: note.callId, name: 'fs__write_file', arguments: { path: path.join(files, note.file), content: note.content } }] };
  });
});

afterEach(() => killAllServers());

afterAll(async () => {
  await llm.close();
});

describe('MCP tools across SIGKILLs of serve', () => {
  it('refuses a server that is not configured, at spawn', async () => {
    const server = await start();
    const refused = await api(server, 'POST', '/agents', { machine: 'agent', input: { tasks: ['x'], mcp: ['nope'] } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('mcp.0: "nope" is not an MCP server configured here (configured: fs)');
    await kill(server);
  }, 60_000);

  it('leaves no MCP server process behind on SIGTERM, and exits 0', async () => {
    const server = await start();
    // A task the fake answers with text: its first LLM call lists the tools of fs, which starts the server.
    expect((await api(server, 'POST', '/agents', { machine: 'agent', id: 'mcp-list', input: { tasks: ['Say hi'], mcp: ['fs'] } })).status).toBe(201);
    await waitForAgent(server, 'mcp-list', (v) => v.state === 'idle' && v.progress === 1);
    const connected = server.output.map((line) => parseLine(line)).find((r) => r?.msg === 'MCP server connected');
    const pid = connected?.pid as number;
    expect(pid).toEqual(expect.any(Number));
    expect(() => process.kill(pid, 0)).not.toThrow();
    server.child.kill('SIGTERM');
    expect(await server.exit).toEqual({ code: 0, signal: null });
    await vi.waitFor(() => expect(() => process.kill(pid, 0)).toThrow(/ESRCH/), { timeout: 5_000, interval: 25 });
  }, 60_000);

  it('an approval that waits survives the kill; approved, the file is written once and no LLM turn is asked twice', async () => {
    let server = await start();
    expect((await api(server, 'POST', '/agents', { machine: 'agent', id: 'mcp-a', input: { tasks: ['Write note A'], mcp: ['fs'] } })).status).toBe(201);
    const waiting = await waitForAgent(server, 'mcp-a', (v) => ((v.context as { pendingApprovals?: unknown[] }).pendingApprovals ?? []).length === 1);
    expect((waiting.context as { pendingApprovals: unknown[] }).pendingApprovals).toEqual([
      expect.objectContaining({ callId: 'call_a', name: 'fs__write_file' }),
    ]);
    // The dashboard shows the call waiting with its server's name.
    const page = await (await fetch(`${server.url}/ui/agents/mcp-a`, { headers: { authorization: 'Bearer e2e-token' } })).text();
    expect(page).toContain('data-mcp-server="fs"');
    expect(page).toContain('fs · write_file');
    expect(turnsOf('Write note A')).toHaveLength(1);

    await kill(server);
    server = await start();
    const restored = await waitForAgent(server, 'mcp-a', (v) => ((v.context as { pendingApprovals?: unknown[] }).pendingApprovals ?? []).length === 1);
    expect(restored.state).toEqual({ sideEffect: 'awaitingApproval' });
    expect(logged()).toEqual([]);
    expect(fs.existsSync(path.join(files, 'a.txt'))).toBe(false);

    expect((await api(server, 'POST', '/agents/mcp-a/events', { type: 'tool.approve', callId: 'call_a' })).status).toBe(202);
    const done = await waitForAgent(server, 'mcp-a', (v) => v.state === 'idle' && v.progress === 1);
    const seq = (done.context as { results: { seq: number; response: string }[] }).results[0]!.seq;
    expect((done.context as { results: { response: string }[] }).results[0]!.response).toBe('Wrote a.txt.');
    expect(fs.readFileSync(path.join(files, 'a.txt'), 'utf8')).toBe('alpha');
    const key = `mcp-a:${seq}:call_a`;
    expect(logged()).toEqual([
      { event: 'received', id: expect.any(Number), name: 'write_file', key },
      { event: 'forwarded', id: expect.any(Number), name: 'write_file', key },
    ]);
    expect(turnsOf('Write note A')).toHaveLength(2);
    // The dashboard shows the call, its tool message and its action-log row with the server's name.
    const after = await (await fetch(`${server.url}/ui/agents/mcp-a`, { headers: { authorization: 'Bearer e2e-token' } })).text();
    expect(after).toMatch(/<div class="tool-call" data-call="call_a">calls <code class="mcp-tool" data-mcp-server="fs"[^>]*>fs · write_file<\/code>/);
    expect(after).toMatch(/data-role="tool" data-call="call_a"><span class="role">tool<\/span> <span class="ok">ok<\/span> <code class="mcp-tool" data-mcp-server="fs"/);
    expect(after).toMatch(/<div class="call" data-call="call_a"><code class="mcp-tool" data-mcp-server="fs"[^>]*>fs · write_file<\/code>/);
    // The call's result is recorded once, under its key.
    const actions = (await api(server, 'GET', '/agents/mcp-a/actions')).body as { items: { action: string; result: { output?: unknown } }[] };
    expect(actions.items.filter((a) => a.action === 'runTools').map((a) => a.result.output)).toEqual([[expect.objectContaining({ callId: 'call_a', name: 'fs__write_file', ok: true })]]);
    // Metrics carry the server and its own name for the tool.
    const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer e2e-token' } })).text();
    expect(metrics).toMatch(/durable_agents_mcp_tool_calls_total\{machine="agent",server="fs",tool="write_file",outcome="ok"\} 1/);
    await kill(server);
  }, 120_000);

  it('a call on its way when serve is killed is sent again with the same key after the restart, and the file is written once', async () => {
    fs.writeFileSync(hold, '');
    let server = await start();
    const before = logged().length;
    expect((await api(server, 'POST', '/agents', { machine: 'agent', id: 'mcp-b', input: { tasks: ['Write note B'], mcp: ['fs'] } })).status).toBe(201);
    await waitForAgent(server, 'mcp-b', (v) => ((v.context as { pendingApprovals?: unknown[] }).pendingApprovals ?? []).length === 1);
    expect((await api(server, 'POST', '/agents/mcp-b/events', { type: 'tool.approve', callId: 'call_b' })).status).toBe(202);
    // The call reached the proxy, which holds it: the server has not seen it.
    await vi.waitFor(() => expect(logged().slice(before).map((l) => l.event)).toEqual(['received']), { timeout: 20_000, interval: 25 });
    await kill(server);
    expect(fs.existsSync(path.join(files, 'b.txt'))).toBe(false);

    fs.rmSync(hold);
    server = await start();
    await waitForAgent(server, 'mcp-b', (v) => v.state === 'idle' && v.progress === 1);
    expect(fs.readFileSync(path.join(files, 'b.txt'), 'utf8')).toBe('beta');
    const calls = logged().slice(before);
    const key = calls[0]!.key;
    expect(key).toMatch(/^mcp-b:\d+:call_b$/);
    // Sent twice (the first never reached the server), with one key; relayed to the server once.
    expect(calls.map((l) => [l.event, l.name, l.key])).toEqual([
      ['received', 'write_file', key],
      ['received', 'write_file', key],
      ['forwarded', 'write_file', key],
    ]);
    expect(turnsOf('Write note B')).toHaveLength(2);
    await kill(server);
  }, 120_000);
});

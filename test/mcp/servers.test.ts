// createMcpServers against real MCP servers from node_modules (server-everything over stdio and over
// streamable HTTP, server-filesystem) and a tiny in-test server that shows each call's `_meta`:
// listing, calls and their results as the model reads them, errors, a process that dies mid-call.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StepError } from '../../src/core/errors.js';
import { createMcpServers, type McpServerPool } from '../../src/mcp/servers.js';
import { captureLogs } from '../helpers/logs.js';
import { tempDir } from '../helpers/temp.js';
import { everythingStdio, filesystemStdio, startEverythingHttp } from '../support/mcp-servers.js';
import { startTestMcpServer, type TestMcpServer } from '../support/mcp-test-server.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
function servers(...args: Parameters<typeof createMcpServers>): McpServerPool {
  const pool = createMcpServers(...args);
  cleanups.push(() => pool.close());
  return pool;
}
async function testServer(...args: Parameters<typeof startTestMcpServer>): Promise<TestMcpServer> {
  const server = await startTestMcpServer(...args);
  cleanups.push(() => server.close());
  return server;
}
const call = (key: string, timeoutMs = 10_000) => ({ idempotencyKey: key, signal: new AbortController().signal, timeoutMs });

describe('createMcpServers', () => {
  it('refuses a server name that does not match MCP_SERVER_NAME, and a config with neither command nor url', () => {
    expect(() => createMcpServers({ 'a__b': { command: 'x' } })).toThrow(/MCP server's name/);
    expect(() => createMcpServers({ 'has space': { command: 'x' } })).toThrow(/MCP server's name/);
    expect(() => createMcpServers({ ok: { url: 'ftp://x' } })).toThrow(/command or an http\(s\) url/);
    expect(createMcpServers({ ok: { url: 'http://127.0.0.1:1/mcp' }, 'also-ok_2': { command: 'x' } }).names).toEqual(['ok', 'also-ok_2']);
  });

  it('lists the tools of server-everything over stdio (connecting lazily, once) and calls them with text results', async () => {
    const pool = servers({ everything: everythingStdio() });
    expect(pool.pid('everything')).toBeNull();
    const [tools] = await Promise.all([pool.listTools(['everything']), pool.listTools(['everything'])]);
    expect(pool.connections('everything')).toBe(1);
    const sum = tools.find((t) => t.tool === 'get-sum')!;
    expect(sum).toEqual({
      server: 'everything',
      tool: 'get-sum',
      name: 'everything__get-sum',
      description: 'Returns the sum of two numbers',
      parameters: { type: 'object', properties: { a: { type: 'number', description: 'First number' }, b: { type: 'number', description: 'Second number' } }, required: ['a', 'b'] },
      approval: false,
    });
    expect(await pool.callTool('everything', 'get-sum', { a: 2, b: 40 }, call('k1'))).toEqual({ ok: true, content: 'The sum of 2 and 40 is 42.' });
    expect(await pool.callTool('everything', 'echo', { message: 'hi' }, call('k2'))).toEqual({ ok: true, content: 'Echo: hi' });
    expect(pool.pid('everything')).toBeGreaterThan(0);
  });

  it('describes images and resources in JSON (mimeType, size; a resource with its text)', async () => {
    const pool = servers({ everything: everythingStdio() });
    const image = await pool.callTool('everything', 'get-tiny-image', {}, call('img'));
    const [before, described, after] = image.content.split('\n');
    expect(before).toBe("Here's the image you requested:");
    expect(JSON.parse(described!)).toEqual({ type: 'image', mimeType: 'image/png', size: expect.any(Number) });
    expect(JSON.parse(described!).size).toBeGreaterThan(100);
    expect(after).toBe('The image above is the MCP logo.');
    const resource = await pool.callTool('everything', 'get-resource-reference', {}, call('res'));
    const part = JSON.parse(resource.content.split('\n')[1]!) as Record<string, unknown>;
    expect(part).toMatchObject({ type: 'resource', uri: 'demo://resource/dynamic/text/1', mimeType: 'text/plain', text: expect.stringContaining('Resource 1: This is a plaintext resource') });
    expect(part.size).toBe(Buffer.byteLength(part.text as string));
  });

  it('tells an isError result as not ok, and a tool the server does not offer as an error', async () => {
    const pool = servers({ everything: everythingStdio() });
    const bad = await pool.callTool('everything', 'get-sum', { a: 'x' }, call('bad'));
    expect(bad.ok).toBe(false);
    expect(bad.content).toContain('Input validation error');
    expect(await pool.callTool('everything', 'no-such-tool', {}, call('none'))).toEqual({ ok: false, content: JSON.stringify({ error: 'The MCP server "everything" no longer offers the tool "no-such-tool".' }) });
    expect(await pool.callTool('gone', 'x', {}, call('gone'))).toEqual({ ok: false, content: JSON.stringify({ error: 'The MCP server "gone" is not configured here any more.' }) });
  });

  it('works with server-everything over streamable HTTP', async () => {
    const http = await startEverythingHttp();
    cleanups.push(() => http.close());
    const pool = servers({ web: { url: http.url } });
    expect((await pool.listTools(['web'])).map((t) => t.name)).toContain('web__echo');
    expect(await pool.callTool('web', 'echo', { message: 'over http' }, call('h1'))).toEqual({ ok: true, content: 'Echo: over http' });
    expect(pool.pid('web')).toBeNull();
  });

  it('marks destructive tools for approval unless the config says approveDestructive: false; reads and writes files', async () => {
    const folder = tempDir('mcp-fs-');
    fs.writeFileSync(path.join(folder, 'a.txt'), 'alpha');
    const pool = servers({ fs: filesystemStdio(folder), fs2: filesystemStdio(folder, { approveDestructive: false }) });
    const tools = await pool.listTools(['fs', 'fs2']);
    const approval = (name: string) => tools.find((t) => t.name === name)?.approval;
    expect([approval('fs__write_file'), approval('fs__edit_file'), approval('fs__read_text_file'), approval('fs__create_directory')]).toEqual([true, true, false, false]);
    expect([approval('fs2__write_file'), approval('fs2__read_text_file')]).toEqual([false, false]);
    expect(await pool.callTool('fs', 'read_text_file', { path: path.join(folder, 'a.txt') }, call('r'))).toEqual({ ok: true, content: 'alpha' });
    expect((await pool.callTool('fs', 'write_file', { path: path.join(folder, 'b.txt'), content: 'beta' }, call('w'))).ok).toBe(true);
    expect(fs.readFileSync(path.join(folder, 'b.txt'), 'utf8')).toBe('beta');
    // Outside the allowed folder: the server refuses, the model is told.
    const outside = await pool.callTool('fs', 'read_text_file', { path: '/etc/hostname' }, call('o'));
    expect(outside.ok).toBe(false);
    expect(outside.content).toMatch(/denied|outside/i);
  });

  it('sends the idempotency key in _meta', async () => {
    const server = await testServer([{ name: 'note' }]);
    const pool = servers({ t: { url: server.url } });
    expect(await pool.callTool('t', 'note', { text: 'x' }, call('agent-1:3:call_7'))).toEqual({ ok: true, content: 'got {"text":"x"}' });
    expect(server.calls).toEqual([{ tool: 'note', args: { text: 'x' }, key: 'agent-1:3:call_7' }]);
  });

  it('skips, with a warning, a tool whose name the model could not call', async () => {
    const long = 'x'.repeat(62);
    const server = await testServer([{ name: 'ok' }, { name: long }, { name: 'has.dot' }]);
    const captured = captureLogs();
    const pool = servers({ t: { url: server.url } }, { logger: captured.logger });
    expect((await pool.listTools(['t'])).map((t) => t.name)).toEqual(['t__ok']);
    expect(captured.logs.filter((l) => l.level === 40).map((l) => l.tool)).toEqual([long, 'has.dot']);
  });

  it('fails transiently when the server cannot be reached (nothing listens, no such program)', async () => {
    const pool = servers({ down: { url: 'http://127.0.0.1:9/mcp' }, nothing: { command: '/nonexistent/mcp-server' } });
    for (const server of ['down', 'nothing']) {
      const err = await pool.listTools([server]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StepError);
      expect(err).toMatchObject({ kind: 'transient', code: 'mcp_unreachable' });
      const callErr = await pool.callTool(server, 'x', {}, call('k')).catch((e: unknown) => e);
      expect(callErr).toMatchObject({ kind: 'transient', code: 'mcp_unreachable' });
    }
  });

  it('fails the calls in flight transiently when a stdio server dies, and starts it again at the next call', async () => {
    const pool = servers({ everything: everythingStdio() });
    await pool.listTools(['everything']);
    const pid = pool.pid('everything')!;
    const inFlight = pool.callTool('everything', 'trigger-long-running-operation', { duration: 5, steps: 5 }, call('long')).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 200));
    process.kill(pid, 'SIGKILL');
    expect(await inFlight).toMatchObject({ kind: 'transient', code: 'mcp_unreachable' });
    expect(await pool.callTool('everything', 'echo', { message: 'again' }, call('again'))).toEqual({ ok: true, content: 'Echo: again' });
    expect(pool.pid('everything')).not.toBe(pid);
    expect(pool.connections('everything')).toBe(2);
  });

  it('opens a new session with a streamable HTTP server that restarted (it no longer knows ours), and sends the call there', async () => {
    const first = await startEverythingHttp();
    const pool = servers({ web: { url: first.url } });
    expect(await pool.callTool('web', 'echo', { message: 'one' }, call('1'))).toEqual({ ok: true, content: 'Echo: one' });
    await first.close();
    const second = await startEverythingHttp(first.port);
    cleanups.push(() => second.close());
    expect(await pool.callTool('web', 'echo', { message: 'two' }, call('2'))).toEqual({ ok: true, content: 'Echo: two' });
    expect(pool.connections('web')).toBe(2);
    // While it is down: a transient failure, and the session after it is a new one again.
    await second.close();
    expect(await pool.callTool('web', 'echo', { message: 'down' }, call('3')).catch((e: unknown) => e)).toMatchObject({ kind: 'transient', code: 'mcp_unreachable' });
    const third = await startEverythingHttp(first.port);
    cleanups.push(() => third.close());
    expect(await pool.callTool('web', 'echo', { message: 'back' }, call('4'))).toEqual({ ok: true, content: 'Echo: back' });
    expect(pool.connections('web')).toBe(3);
  });

  it('lists again once the server says its tools changed (notifications/tools/list_changed)', async () => {
    const pool = servers({ changing: { command: process.execPath, args: [path.join(import.meta.dirname, '../fixtures/mcp-changing-tools.mjs')] } });
    expect((await pool.listTools(['changing'])).map((t) => t.name)).toEqual(['changing__add_tool']);
    expect(await pool.callTool('changing', 'add_tool', {}, call('add'))).toEqual({ ok: true, content: 'added' });
    await expect.poll(async () => (await pool.listTools(['changing'])).map((t) => t.name), { timeout: 5_000 }).toEqual(['changing__add_tool', 'changing__added']);
    expect(await pool.callTool('changing', 'added', {}, call('added'))).toEqual({ ok: true, content: 'here' });
    expect(pool.connections('changing')).toBe(1);
  });

  it('times out a call transiently', async () => {
    const server = await testServer([{ name: 'slow', answer: () => new Promise((resolve) => setTimeout(() => resolve('late'), 2_000)) }]);
    const pool = servers({ t: { url: server.url, timeoutMs: 200 } });
    expect(await pool.callTool('t', 'slow', { text: 'x' }, call('k', 60_000)).catch((e: unknown) => e)).toMatchObject({ kind: 'transient', code: 'tool_timeout' });
  });

  it('keeps parameters of a tool as its server lists them', async () => {
    const server = await testServer([{ name: 'typed', parameters: z.object({ n: z.number().int(), tags: z.array(z.string()).optional() }) }]);
    const pool = servers({ t: { url: server.url } });
    const [typed] = await pool.listTools(['t']);
    expect(typed!.parameters).toMatchObject({ type: 'object', properties: { n: { type: 'integer' }, tags: { type: 'array' } }, required: ['n'] });
  });
});

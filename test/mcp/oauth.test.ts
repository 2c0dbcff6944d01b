// An MCP server behind OAuth (client credentials): the SDK's client finds the authorization server
// from the 401, gets a token with the configured id and secret, and sends it; a revoked token is
// replaced; wrong credentials and an authorization server other than the configured issuer fail
// to connect, and the credentials never reach a server that was not named.
import { afterEach, describe, expect, it } from 'vitest';
import { StepError } from '../../src/core/errors.js';
import { createMcpServers, type McpServerPool } from '../../src/mcp/servers.js';
import type { McpServerConfig } from '../../src/mcp/types.js';
import { startTestMcpServer, type TestMcpServer } from '../support/mcp-test-server.js';

const CLIENT = { clientId: 'agents-prod', clientSecret: 's3cret:with/odd&chars' };

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function protectedServer(): Promise<TestMcpServer> {
  const server = await startTestMcpServer([{ name: 'lookup', answer: (args) => `found ${String(args.text)}` }], { oauth: CLIENT });
  cleanups.push(() => server.close());
  return server;
}

function pool(config: McpServerConfig): McpServerPool {
  const servers = createMcpServers({ secured: config });
  cleanups.push(() => servers.close());
  return servers;
}

const call = (key: string) => ({ idempotencyKey: key, signal: new AbortController().signal, timeoutMs: 10_000 });

describe('an MCP server behind OAuth (client credentials)', () => {
  it('gets a token once, lists and calls with it, and gets a new one when the server revokes it', async () => {
    const server = await protectedServer();
    const servers = pool({ url: server.url, oauth: { ...CLIENT, issuer: server.oauth!.issuer } });
    const tools = await servers.listTools(['secured']);
    expect(tools.map((t) => t.name)).toEqual(['secured__lookup']);
    expect(await servers.callTool('secured', 'lookup', { text: 'a' }, call('k1'))).toEqual({ ok: true, content: 'found a' });
    expect(server.oauth!.tokenRequests).toEqual([{ clientId: CLIENT.clientId, granted: true }]);

    server.oauth!.revokeAll();
    expect(await servers.callTool('secured', 'lookup', { text: 'b' }, call('k2'))).toEqual({ ok: true, content: 'found b' });
    expect(server.oauth!.tokenRequests).toEqual([
      { clientId: CLIENT.clientId, granted: true },
      { clientId: CLIENT.clientId, granted: true },
    ]);
    // Each call ran once, with its key.
    expect(server.calls.map((c) => c.key)).toEqual(['k1', 'k2']);
  });

  it('cannot connect without credentials, with a wrong secret, or to a server naming another authorization server', async () => {
    const server = await protectedServer();
    const failure = (config: McpServerConfig) => pool(config).listTools(['secured']).then(() => undefined, (err: unknown) => err);

    // Each is the config's to mend, not a wait's: permanent (the agent parks in failed for a person).
    const none = await failure({ url: server.url });
    expect(none).toMatchObject({ kind: 'permanent', code: 'mcp_refused', status: 401 });
    expect(server.oauth!.tokenRequests).toEqual([]);

    const wrong = await failure({ url: server.url, oauth: { ...CLIENT, clientSecret: 'guess', issuer: server.oauth!.issuer } });
    expect(wrong).toBeInstanceOf(StepError);
    expect(wrong).toMatchObject({ kind: 'permanent', code: 'mcp_unauthorized' });
    const asked = server.oauth!.tokenRequests.length;
    expect(asked).toBeGreaterThan(0);
    expect(server.oauth!.tokenRequests.every((r) => !r.granted)).toBe(true);

    // The server names its own authorization server, not the configured one: nothing is presented.
    const elsewhere = await failure({ url: server.url, oauth: { ...CLIENT, issuer: 'http://127.0.0.1:9/' } });
    expect(elsewhere).toMatchObject({ kind: 'permanent', code: 'mcp_unauthorized' });
    expect((elsewhere as Error).message).toContain('http://127.0.0.1:9/');
    expect(server.oauth!.tokenRequests).toHaveLength(asked);
    expect(server.calls).toEqual([]);
  });
});

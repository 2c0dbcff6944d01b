// A tiny MCP server over streamable HTTP (the SDK's McpServer, stateless), for what the real
// servers cannot show: the `_meta` of each call (the idempotency key), a call that waits for the
// test, a tool list the test changes. Every call is recorded with its arguments and key.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { IDEMPOTENCY_KEY_META } from '../../src/mcp/connection.js';

export interface TestMcpTool {
  name: string;
  description?: string;
  /** Marked `destructiveHint: true`. */
  destructive?: boolean;
  /** Its parameters (default: `{ text: string }`). */
  parameters?: z.ZodObject;
  /** What the call answers (default: `got <args as JSON>`); a thrown error is an `isError` result. */
  answer?: (args: Record<string, unknown>) => string | Promise<string>;
}

export interface TestMcpCall {
  tool: string;
  args: Record<string, unknown>;
  key: unknown;
}

export interface TestMcpServer {
  url: string;
  calls: TestMcpCall[];
  /** The tools offered from the next request on. */
  tools: TestMcpTool[];
  /** With `oauth`: the server is its own authorization server (its issuer is `issuer`). */
  oauth: TestOAuth | undefined;
  close(): Promise<void>;
}

/** What the authorization server saw, and a way to make every token it gave useless. */
export interface TestOAuth {
  issuer: string;
  /** Token requests: their client id (from Basic auth) and whether they were granted. */
  tokenRequests: { clientId: string | undefined; granted: boolean }[];
  /** MCP requests refused for a missing or unknown token. */
  refused: number;
  revokeAll(): void;
}

export interface TestMcpServerOptions {
  /** Every MCP request needs a Bearer token from this server's token endpoint (OAuth client credentials). */
  oauth?: { clientId: string; clientSecret: string };
}

export async function startTestMcpServer(tools: TestMcpTool[], options: TestMcpServerOptions = {}): Promise<TestMcpServer> {
  const calls: TestMcpCall[] = [];
  const state = { tools };
  let oauth: (TestOAuth & { tokens: Set<string> }) | undefined;
  const serve = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (oauth && !guard(oauth, options.oauth!, req, res)) return;
    // Stateless: a server of its own for each request, with the tools offered now.
    const server = new McpServer({ name: 'test-mcp', version: '1' });
    for (const t of state.tools) {
      server.registerTool(
        t.name,
        { description: t.description ?? `The test tool ${t.name}`, inputSchema: t.parameters ?? z.object({ text: z.string() }), annotations: { destructiveHint: t.destructive === true } },
        async (args: Record<string, unknown>, extra: { _meta?: Record<string, unknown> }) => {
          calls.push({ tool: t.name, args, key: extra._meta?.[IDEMPOTENCY_KEY_META] });
          try {
            return { content: [{ type: 'text' as const, text: t.answer ? await t.answer(args) : `got ${JSON.stringify(args)}` }] };
          } catch (err) {
            return { isError: true, content: [{ type: 'text' as const, text: (err as Error).message }] };
          }
        },
      );
    }
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close().then(() => server.close()));
    await server.connect(transport);
    await transport.handleRequest(req, res);
  };
  const httpServer = http.createServer((req, res) => {
    serve(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as AddressInfo;
  if (options.oauth) {
    const tokens = new Set<string>();
    oauth = { issuer: `http://127.0.0.1:${port}`, tokenRequests: [], refused: 0, tokens, revokeAll: () => tokens.clear() };
  }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    oauth,
    calls,
    get tools() {
      return state.tools;
    },
    set tools(next) {
      state.tools = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}

/**
 * The OAuth side of a protected server, as a client meets it: its protected resource metadata
 * (RFC 9728) names the authorization server, whose metadata (RFC 8414) names the token endpoint;
 * the token endpoint grants client credentials sent with Basic auth; an MCP request without a
 * token it granted gets 401 pointing at the resource metadata. True when the request may go on.
 */
function guard(oauth: TestOAuth & { tokens: Set<string> }, client: { clientId: string; clientSecret: string }, req: http.IncomingMessage, res: http.ServerResponse): boolean {
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    return false;
  };
  const path = new URL(req.url ?? '/', oauth.issuer).pathname;
  if (path.startsWith('/.well-known/oauth-protected-resource')) return json(200, { resource: `${oauth.issuer}/mcp`, authorization_servers: [oauth.issuer] });
  if (path === '/.well-known/oauth-authorization-server') {
    return json(200, {
      issuer: oauth.issuer,
      token_endpoint: `${oauth.issuer}/token`,
      authorization_endpoint: `${oauth.issuer}/authorize`,
      response_types_supported: ['code'],
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic'],
    });
  }
  if (path.startsWith('/.well-known/')) return json(404, { error: 'not_found' });
  if (path === '/token') {
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    // `id:secret`, the secret as it is (the SDK's client does not form-encode them; a secret may hold ':').
    const pair = basic ? Buffer.from(basic, 'base64').toString('utf8') : '';
    const colon = pair.indexOf(':');
    const [id, secret] = colon < 0 ? [] : [pair.slice(0, colon), pair.slice(colon + 1)];
    const granted = id === client.clientId && secret === client.clientSecret;
    oauth.tokenRequests.push({ clientId: id, granted });
    req.resume();
    if (!granted) return json(401, { error: 'invalid_client' });
    const token = `token-${oauth.tokenRequests.length}`;
    oauth.tokens.add(token);
    return json(200, { access_token: token, token_type: 'Bearer', expires_in: 3600 });
  }
  const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (token !== undefined && oauth.tokens.has(token)) return true;
  oauth.refused++;
  req.resume();
  return json(401, { error: 'invalid_token' }, { 'www-authenticate': `Bearer resource_metadata="${oauth.issuer}/.well-known/oauth-protected-resource/mcp"` });
}

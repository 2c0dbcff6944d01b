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
  close(): Promise<void>;
}

export async function startTestMcpServer(tools: TestMcpTool[]): Promise<TestMcpServer> {
  const calls: TestMcpCall[] = [];
  const state = { tools };
  const serve = async (req: http.IncomingMessage, res: http.ServerResponse) => {
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
  return {
    url: `http://127.0.0.1:${port}/mcp`,
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

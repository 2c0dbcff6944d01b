/**
 * The MCP client of durable-agents (src/mcp/servers.ts: createMcpServers) as a client under test
 * for `@modelcontextprotocol/conformance client --command "…" --scenario NAME`: the runner starts
 * a test server, appends its URL to the command, and names the scenario in
 * MCP_CONFORMANCE_SCENARIO. This client does what the service does with a server: it lists the
 * tools and calls each once, with arguments made from its inputSchema and an idempotency key in
 * `_meta`. It has no sampling or elicitation, and its OAuth is the client credentials grant only
 * (a server config's `oauth`, not given here): the scenarios that need more fail here.
 *
 *   node --import tsx bench/mcp-conformance-client.ts http://localhost:PORT/mcp
 *
 * Exit 0 when every call answered (an `isError` result included), 1 otherwise.
 *
 * The conformance package is not a dependency: 0.1.16 needs Node 22 (it imports `fs.globSync`, used
 * only by its `tier-check`; on Node 20 a loader hook that gives it a stub runs the rest) and brings
 * ~120 packages. Installed elsewhere, from a checkout of this repository:
 *
 *   npx @modelcontextprotocol/conformance client --suite all \
 *     --command "node --import <this repo>/node_modules/tsx/dist/loader.mjs <this repo>/bench/mcp-conformance-client.ts"
 *
 * 2026-12-05, 0.1.16: `initialize`, `tools_call` and `sse-retry` (reconnects after the server
 * closes a call's SSE stream, waits its `retry`, sends `Last-Event-ID`) pass, 5 checks of 5;
 * `elicitation-sep1034-client-defaults` fails (no elicitation); the `auth/*` scenarios fail (then
 * the client had no OAuth at all; since, a config's `oauth` gives it the client credentials grant,
 * not run against them here) but `auth/resource-mismatch`, which passes because the client never
 * starts an authorization flow.
 */
import { createLogger } from '../src/core/logger.js';
import { createMcpServers } from '../src/mcp/servers.js';

const url = process.argv.at(-1);
if (!url || !/^https?:\/\//.test(url)) {
  console.error('usage: mcp-conformance-client.ts <server URL>');
  process.exit(2);
}
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '(none)';
const servers = createMcpServers({ conformance: { url, timeoutMs: 10_000 } }, { logger: createLogger({ level: 'info' }) });
let failed = false;
try {
  const tools = await servers.listTools(['conformance']);
  console.log(JSON.stringify({ scenario, tools: tools.map((t) => ({ name: t.name, approval: t.approval })) }));
  for (const [i, tool] of tools.entries()) {
    const args = sampleArguments(tool.parameters);
    try {
      const outcome = await servers.callTool('conformance', tool.tool, args, { idempotencyKey: `conformance:1:call_${i}`, signal: AbortSignal.timeout(15_000) });
      console.log(JSON.stringify({ tool: tool.name, args, outcome }));
    } catch (err) {
      failed = true;
      console.log(JSON.stringify({ tool: tool.name, args, error: err instanceof Error ? err.message : String(err) }));
    }
  }
} catch (err) {
  failed = true;
  console.log(JSON.stringify({ scenario, error: err instanceof Error ? err.message : String(err) }));
} finally {
  await servers.close();
}
process.exit(failed ? 1 : 0);

/** Arguments a schema takes: each required property (all, when none is required) a sample of its type. */
function sampleArguments(schema: Record<string, unknown>): Record<string, unknown> {
  const properties = (schema.properties ?? {}) as Record<string, { type?: unknown; enum?: unknown[]; default?: unknown }>;
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : Object.keys(properties);
  return Object.fromEntries(
    required.map((name, i) => {
      const p = properties[name] ?? {};
      if (p.default !== undefined) return [name, p.default];
      if (Array.isArray(p.enum) && p.enum.length > 0) return [name, p.enum[0]];
      switch (p.type) {
        case 'number':
        case 'integer':
          return [name, i + 2];
        case 'boolean':
          return [name, true];
        case 'array':
          return [name, []];
        case 'object':
          return [name, {}];
        default:
          return [name, 'conformance'];
      }
    }),
  );
}

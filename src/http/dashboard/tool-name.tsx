import type { FC } from 'hono/jsx';

/** An MCP server's tool: the server's configured name and the tool's own name there. */
export interface McpToolRef {
  server: string;
  tool: string;
}

/**
 * A tool's name as the page shows it: the name the model called, or for an MCP server's tool
 * `server · tool` (the model's name, `<server>__<tool>`, in its title), so that a call shows which
 * server ran it. Only a tool the agent's record says is an MCP tool is shown so: an HTTP or code
 * tool may have `__` in its name too.
 */
export const ToolName: FC<{ name: string | undefined; mcp?: McpToolRef | undefined }> = ({ name, mcp }) =>
  mcp ? (
    <code class="mcp-tool" data-mcp-server={mcp.server} title={`MCP server "${mcp.server}", tool "${mcp.tool}" (the model calls it ${name ?? '?'})`}>
      {mcp.server} · {mcp.tool}
    </code>
  ) : (
    <code>{name ?? '?'}</code>
  );

/** The MCP tools among tool specs (`{ name, mcp: { server, tool } }`), by the name the model calls. */
export function mcpToolsOf(specs: unknown, into: Map<string, McpToolRef> = new Map()): Map<string, McpToolRef> {
  if (!Array.isArray(specs)) return into;
  for (const spec of specs as unknown[]) {
    if (!spec || typeof spec !== 'object') continue;
    const { name, mcp } = spec as { name?: unknown; mcp?: { server?: unknown; tool?: unknown } | null };
    if (typeof name === 'string' && typeof mcp?.server === 'string' && typeof mcp.tool === 'string') into.set(name, { server: mcp.server, tool: mcp.tool });
  }
  return into;
}

/**
 * The configured MCP servers as one tool source: `createMcpServers({ files: { command: 'npx', args: [...] } })`.
 * Each server gets one connection, opened at its first use and shared by every agent; whoever
 * creates the servers closes them (`close()`, after the runtime that uses them: see docs/tools.md).
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { silentLogger, type Logger } from '../core/logger.js';
import { McpConnection } from './connection.js';
import { MCP_SERVER_NAME, mcpToolName, type McpCallOutcome, type McpServerConfig, type McpServers, type McpToolInfo } from './types.js';

/** The names the model may call (the reference agent's tool name rule). */
const MODEL_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** A call's time limit when neither the server's config nor the caller gives one. */
const DEFAULT_CALL_TIMEOUT_MS = 30_000;

export interface McpServersOptions {
  /** Connections, reconnections, tools skipped for their names, and each server's stderr (at debug). Default: silent. */
  logger?: Logger;
}

/** `McpServers`, with what tests and the dashboard may look at. */
export interface McpServerPool extends McpServers {
  /** The process id of a stdio server while it runs; null otherwise. */
  pid(server: string): number | null;
  /** Connections opened to a server so far (more than one: it was reconnected, or its process restarted). */
  connections(server: string): number;
}

export function createMcpServers(configs: Record<string, McpServerConfig>, options: McpServersOptions = {}): McpServerPool {
  const logger = options.logger ?? silentLogger;
  for (const [name, config] of Object.entries(configs)) checkConfig(name, config);
  const connections = new Map(Object.entries(configs).map(([name, config]) => [name, new McpConnection(name, config, logger)]));
  const warned = new Set<string>();

  const toInfo = (server: string, tool: Tool): McpToolInfo | undefined => {
    const name = mcpToolName(server, tool.name);
    if (!MODEL_TOOL_NAME.test(name)) {
      if (!warned.has(name)) logger.warn({ mcpServer: server, tool: tool.name }, `MCP tool skipped: "${name.slice(0, 100)}" is not a tool name the model may call (${MODEL_TOOL_NAME})`);
      warned.add(name);
      return undefined;
    }
    const { $schema: _schema, ...parameters } = (tool.inputSchema ?? { type: 'object' }) as Record<string, unknown>;
    return {
      server,
      tool: tool.name,
      name,
      description: tool.description ?? tool.title ?? null,
      parameters,
      approval: tool.annotations?.destructiveHint === true && configs[server]!.approveDestructive !== false,
    };
  };

  return {
    names: [...connections.keys()],
    async listTools(servers, signal) {
      const lists = await Promise.all(
        servers.map(async (server) => {
          const connection = connections.get(server);
          if (!connection) {
            logger.warn({ mcpServer: server }, 'MCP server not configured here: its tools are not offered');
            return [];
          }
          return (await connection.listTools(signal)).flatMap((tool) => toInfo(server, tool) ?? []);
        }),
      );
      return lists.flat();
    },
    async callTool(server, tool, args, callOptions): Promise<McpCallOutcome> {
      const connection = connections.get(server);
      if (!connection) return { ok: false, content: JSON.stringify({ error: `The MCP server "${server}" is not configured here any more.` }) };
      const timeoutMs = configs[server]!.timeoutMs ?? callOptions.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
      return connection.callTool(tool, args, { idempotencyKey: callOptions.idempotencyKey, signal: callOptions.signal, timeoutMs });
    },
    concurrency: (server) => configs[server]?.concurrency,
    async close() {
      await Promise.all([...connections.values()].map((c) => c.close()));
    },
    pid: (server) => connections.get(server)?.pid ?? null,
    connections: (server) => connections.get(server)?.connections ?? 0,
  };
}

function checkConfig(name: string, config: McpServerConfig): void {
  if (!MCP_SERVER_NAME.test(name)) throw new Error(`An MCP server's name must match ${MCP_SERVER_NAME} (got "${name.slice(0, 100)}").`);
  const hasCommand = 'command' in config && typeof config.command === 'string' && config.command !== '';
  const hasUrl = 'url' in config && typeof config.url === 'string' && URL.canParse(config.url) && /^https?:/i.test(config.url);
  if (hasCommand === hasUrl) throw new Error(`The MCP server "${name}" needs either a command or an http(s) url.`);
  if (config.concurrency !== undefined && !(Number.isInteger(config.concurrency) && config.concurrency >= 1)) {
    throw new Error(`The MCP server "${name}": concurrency must be a positive integer (got ${String(config.concurrency)}).`);
  }
}

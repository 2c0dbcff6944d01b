// What a `serve --config FILE` module exports, and `defineConfig` to write one with types. Only
// types and an identity function: the package entry exports it without loading the service.
import type { Logger } from '../core/logger.js';
import type { MachineDefinition } from '../durable/definition.js';
import type { LlmClient } from '../llm/client.js';
import type { CodeTool } from '../agents/reference/tools.js';
import type { ModelPrice } from '../agents/reference/types.js';

import type { McpServerConfig } from '../mcp/types.js';

/** An MCP server the reference agent takes tools from (a program on stdio, or a streamable HTTP URL). */
export type { McpServerConfig };

/** The machines and code tools a config adds to `durable-agents serve`. */
export interface ServiceConfig {
  /** Registered beside the reference `agent`: each gets HTTP routes, the dashboard, metrics. */
  machines?: MachineDefinition[];
  /** Code tools the reference agent offers to every agent, besides the HTTP tools of its input. */
  tools?: CodeTool[];
  /**
   * MCP servers by name (`^[A-Za-z0-9_-]{1,32}$`, no `__`), beside those of `--mcp`: an agent
   * spawned with `"mcp": ["NAME"]` is offered their tools, as `<name>__<tool>`.
   */
  mcpServers?: Record<string, McpServerConfig>;
  /**
   * Models' prices (US dollars per million input and output tokens), beside those of
   * `--llm-prices`: an agent's budget in dollars (`budget.maxCostUsd`) needs its model's.
   */
  prices?: Record<string, ModelPrice>;
}

/** What the service built from its flags, for a config that is a function. */
export interface ServiceConfigContext {
  llm: LlmClient;
  logger: Logger;
}

/** A config module's default export: the config, or a function (possibly async) that makes it. */
export type ServiceConfigExport = ServiceConfig | ((context: ServiceConfigContext) => ServiceConfig | Promise<ServiceConfig>);

/** The identity: `export default defineConfig(({ llm }) => ({ machines: [...] }))` is typed. */
export function defineConfig<T extends ServiceConfigExport>(config: T): T {
  return config;
}

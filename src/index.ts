/**
 * The library surface of durable-agents. The storage drivers are subpath exports
 * (`durable-agents/sqlite`, `durable-agents/postgres`) so that importing this file loads neither
 * native SQLite nor `pg`.
 */
export { createRuntime, Runtime, WaitForError, type RuntimeOptions, type WaitForOptions } from './runtime/runtime.js';
export type { RetentionPolicy } from './runtime/pruner.js';
export { currentAgent, type DurableAgentHandle } from './durable/current-agent.js';
export type { ActorDeclaration, ActorKind, MachineDefinition, MachineRetention, PersistedSnapshotJson, SnapshotUpgrade } from './durable/definition.js';
export { AWAIT_COMMIT_TAG, COMMITTED_EVENT } from './durable/commit-barrier.js';
export { sleepUntil } from './durable/sleep-until.js';
export { sendToAgent, type AgentMessage, type SendArgs } from './durable/send-to-agent.js';
export { spawnAgent, SPAWN_EVENT, type SpawnEmit, type SpawnResolvable } from './durable/spawn-agent.js';
export { CHILD_EVENT_TYPES, reportKey, type ChildDoneEvent, type ChildEvent, type ChildFailedEvent, type ChildResponseEvent } from './durable/child-events.js';
export { lintDefinition, lintMachine, LINT_CODES, type LintCode, type LintFinding, type LintSeverity } from './durable/lint.js';
export { agentDefinition, AGENT_ACTORS, type AgentDependencies } from './agents/reference/definition.js';
export { tool, type CodeTool, type ToolCallContext } from './agents/reference/tools.js';
export { createMcpServers, type McpServerPool, type McpServersOptions } from './mcp/servers.js';
export { IDEMPOTENCY_KEY_META } from './mcp/connection.js';
export { MCP_SERVER_NAME, mcpToolName, type McpCallOutcome, type McpServers, type McpToolInfo } from './mcp/types.js';
export { parseOutboundPolicy, type OutboundPolicy } from './core/outbound.js';
export { agentMachine, createAgentMachine, DEFAULT_AGENT_DEFAULTS } from './agents/reference/machine.js';
export type * from './agents/reference/types.js';
export type * from './store/store.js';
export type { ChatMessage, LlmAnswer, LlmClient, LlmRequest, TokenUsage, ToolCall, ToolDefinition } from './llm/client.js';
export { textAnswer } from './llm/client.js';
export { createOpenAiClient } from './llm/openai-client.js';
export { createSimulatedLlm } from './llm/simulated-client.js';
export * from './core/errors.js';
export { createLogger, type Logger, type LoggerOptions, type LogFormat, type LogLevel } from './core/logger.js';
export type { AgentView } from './runtime/views.js';
export type { MachineAgents, SpawnInputOf } from './runtime/typed-agents.js';
export type { RuntimeObserver } from './runtime/observer.js';
export { combineObservers } from './observability/combine-observers.js';
export { createTracingObserver } from './observability/tracing.js';
export { toStatelyCode } from './observability/stately-code.js';
export { defineConfig, type McpServerConfig, type ServiceConfig, type ServiceConfigContext, type ServiceConfigExport } from './service/define-config.js';

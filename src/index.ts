/** The library surface of durable-agents. */
export { createRuntime, Runtime, type RuntimeOptions } from './runtime/runtime.js';
export { currentAgent, type DurableAgentHandle } from './runtime/durable-machine.js';
export type { MachineDefinition, PersistedSnapshotJson, SnapshotUpgrade } from './runtime/machine-definition.js';
export { AWAIT_COMMIT_TAG, COMMITTED_EVENT } from './runtime/commit-barrier.js';
export { agentDefinition, type AgentDependencies } from './runtime/agent-definition.js';
export { agentMachine, createAgentMachine, DEFAULT_AGENT_DEFAULTS } from './machines/agent.js';
export type * from './machines/agent-types.js';
export { openSqliteStore, type SqliteStoreOptions } from './persistence/sqlite/sqlite-store.js';
export type * from './persistence/store.js';
export type { LlmClient } from './llm/client.js';
export { createOpenAiClient } from './llm/openai-client.js';
export { createSimulatedLlm } from './llm/simulated-client.js';
export * from './errors.js';
export type { AgentView } from './runtime/views.js';
export type { RuntimeObserver } from './runtime/observer.js';
export { combineObservers } from './observability/combine-observers.js';
export { createTracingObserver } from './observability/tracing.js';
export { toStatelyCode } from './observability/stately-code.js';

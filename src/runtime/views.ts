import type { AgentRecord, AgentStatus, CheckpointRecord, Store } from '../store/store.js';
import type { AgentHost } from './agent-host.js';
import { agentErrorView, thrownErrorView, type AgentErrorView } from './agent-error.js';
import { contextOf } from './restore.js';

/**
 * The agent view of the contract. `TContext`: its context's type, `unknown` unless the view comes
 * from a handle typed by the agent's machine (`runtime.agentsOf(definition)`, typed-agents.ts).
 */
export interface AgentView<TContext = unknown> {
  id: string;
  machine: string;
  status: AgentStatus;
  state: unknown;
  context: TContext;
  progress: number;
  createdAt: string;
  updatedAt: string;
  /** A child agent's parent (one spawned by another agent's `spawnAgent`, or as a tool); absent otherwise. */
  parent?: string;
  /** The agents this one spawned, oldest first (only in a single agent's view, and only when it has any). */
  children?: string[];
  /**
   * What the agent waits for that is not an event: `llm_capacity` while its LLM call waits at the
   * runtime's LLM gate, `tool_capacity` while a tool call waits for room under its tool's
   * `concurrency` (only in a single agent's view; not a failure: it is served in turn).
   */
  waiting?: 'llm_capacity' | 'tool_capacity';
  /** Why an agent in `error` is there (quarantined: its stored state cannot be used; or its machine threw); only then. */
  error?: AgentErrorView;
}

export function toAgentView(
  agent: AgentRecord,
  latest: { state: unknown; context: unknown; progress: number; updatedAt: string } | undefined,
): AgentView {
  return {
    id: agent.id,
    machine: agent.machine,
    status: agent.status,
    state: latest?.state ?? agent.state,
    context: latest?.context ?? null,
    progress: latest?.progress ?? agent.progress,
    createdAt: agent.createdAt,
    updatedAt: latest?.updatedAt ?? agent.updatedAt,
    ...(agent.parent ? { parent: agent.parent } : {}),
    ...(agent.status === 'error' ? { error: agentErrorView(agent.error) } : {}),
  };
}

/** The view of an agent live here, from memory (its status is its last checkpoint's). */
export function liveView(host: AgentHost): AgentView | undefined {
  const latest = host.latest;
  if (!latest) return undefined;
  return {
    id: host.agentId,
    machine: host.machine.name,
    status: latest.status,
    state: latest.state,
    context: latest.context,
    progress: latest.progress,
    createdAt: host.createdAt,
    updatedAt: latest.at,
    ...(host.parent !== undefined ? { parent: host.parent } : {}),
    ...(latest.status === 'error' ? { error: thrownErrorView(host.snapshot().error) } : {}),
  };
}

/** The view of an agent not in memory: its row and, when it has one, its last checkpoint. */
export async function storedView(store: Pick<Store, 'getCheckpoint'>, agent: AgentRecord): Promise<AgentView> {
  const checkpoint = agent.lastSeq > 0 ? await store.getCheckpoint(agent.id, agent.lastSeq) : undefined;
  return toAgentView(agent, checkpoint && { ...checkpoint, context: contextOf(checkpoint), updatedAt: agent.updatedAt });
}

/** The view an agent had at one of its checkpoints (a stream's past, read from the store). */
export function checkpointView(agent: AgentRecord, checkpoint: CheckpointRecord): AgentView {
  return toAgentView(
    { ...agent, status: checkpoint.status as AgentRecord['status'] },
    { ...checkpoint, context: contextOf(checkpoint), updatedAt: checkpoint.createdAt },
  );
}

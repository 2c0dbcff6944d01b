/**
 * An agent as a list shows it: the agent view without its context (and without what only a single
 * agent's view has: children, waiting). Built from the agent row alone, so a page of a thousand
 * agents with long conversations reads no checkpoint and stays a few hundred kilobytes.
 */
import type { AgentRecord, AgentStatus } from '../store/store.js';
import { agentErrorView, type AgentErrorView } from './agent-error.js';

export interface AgentSummary {
  id: string;
  machine: string;
  status: AgentStatus;
  /** The XState state value at its last committed checkpoint (null before the first). */
  state: unknown;
  progress: number;
  createdAt: string;
  updatedAt: string;
  /** A child agent's parent; absent otherwise. */
  parent?: string;
  /** Why an agent in `error` is there; only then. */
  error?: AgentErrorView;
}

/** The row's summary: every field is a column the checkpoint commit keeps up to date. */
export function toAgentSummary(agent: AgentRecord): AgentSummary {
  return {
    id: agent.id,
    machine: agent.machine,
    status: agent.status,
    state: agent.state,
    progress: agent.progress,
    createdAt: agent.createdAt,
    updatedAt: agent.updatedAt,
    ...(agent.parent ? { parent: agent.parent } : {}),
    ...(agent.status === 'error' ? { error: agentErrorView(agent.error) } : {}),
  };
}

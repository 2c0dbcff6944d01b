import type { AgentRecord, AgentStatus } from '../store/store.js';

/** The agent view of the contract. */
export interface AgentView {
  id: string;
  machine: string;
  status: AgentStatus;
  state: unknown;
  context: unknown;
  progress: number;
  createdAt: string;
  updatedAt: string;
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
  };
}

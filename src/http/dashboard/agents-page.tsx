import type { FC } from 'hono/jsx';
import { AGENT_STATUSES, type AgentRecord, type AgentStatus } from '../../store/store.js';
import { age, agentHref, clock } from './format.js';
import { Layout, StateName, StatusBadge } from './layout.js';

export interface AgentFilters {
  machine?: string | undefined;
  status?: AgentStatus | undefined;
  q?: string | undefined;
  cursor?: string | undefined;
}

export interface AgentsPageProps {
  agents: AgentRecord[];
  machines: string[];
  filters: AgentFilters;
  /** The cursor of the next page, when there is one. */
  nextCursor: string | null;
  /** Agents by status over the whole store. */
  counts: Record<string, number>;
  auth: boolean;
  readOnly?: boolean;
  /** MCP servers configured here, named under the spawn form. */
  mcpServers?: readonly string[];
  now: number;
}

const query = (params: Record<string, string | undefined>) => {
  const search = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => !!e[1]));
  const text = search.toString();
  return text ? `/?${text}` : '/';
};

const AgentRow: FC<{ agent: AgentRecord; now: number }> = ({ agent, now }) => (
    <tr data-agent={agent.id}>
      <td>
        <a href={agentHref(agent.id)} class="mono">
          {agent.id}
        </a>
        {agent.parent ? (
          <div class="small muted" data-cell="parent">
            child of{' '}
            <a href={agentHref(agent.parent)} class="mono">
              {agent.parent}
            </a>
          </div>
        ) : null}
      </td>
      <td>{agent.machine}</td>
      <td>
        <StatusBadge status={agent.status} />
      </td>
      <td>
        <StateName value={agent.state} cell="state" />
      </td>
      <td data-cell="progress">{agent.progress}</td>
      <td title={clock(agent.createdAt)}>{age(agent.createdAt, now)}</td>
      <td title={clock(agent.updatedAt)} class="muted">
        {age(agent.updatedAt, now)} ago
      </td>
    </tr>
);

export const AgentsPage: FC<AgentsPageProps> = ({ agents, machines, filters, nextCursor, counts, auth, readOnly, mcpServers = [], now }) => {
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  return (
    <Layout title="Agents" page="agents" auth={auth} readOnly={readOnly}>
      <div class="card">
        <div class="row" style="justify-content: space-between">
          <div>
            <h1>Agents</h1>
            <div class="stats" data-live="counts">
              <a href={query({ machine: filters.machine, q: filters.q })}>
                <span class="badge stopped">all {total}</span>
              </a>
              {AGENT_STATUSES.map((status) => (
                <a href={query({ machine: filters.machine, q: filters.q, status })}>
                  <span class={`badge ${status}`}>
                    {status} {counts[status] ?? 0}
                  </span>
                </a>
              ))}
            </div>
          </div>
          <form id="filters" class="row" method="get" action="/">
            <label>
              Machine{' '}
              <select name="machine">
                <option value="">all</option>
                {machines.map((m) => (
                  <option value={m} selected={filters.machine === m}>
                    {m}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Status{' '}
              <select name="status">
                <option value="">all</option>
                {AGENT_STATUSES.map((s) => (
                  <option value={s} selected={filters.status === s}>
                    {s}
                  </option>
                ))}
              </select>
            </label>
            <input type="search" name="q" value={filters.q ?? ''} placeholder="Filter by id or state…" aria-label="Text filter" />
            <button type="submit" class="secondary">
              Filter
            </button>
          </form>
        </div>
      </div>

      <div class="card">
        <table id="agents">
          <thead>
            <tr>
              <th>Agent</th>
              <th>Machine</th>
              <th>Status</th>
              <th>State</th>
              <th>Progress</th>
              <th>Age</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody data-live="agents">
            {agents.length ? (
              agents.map((agent) => <AgentRow agent={agent} now={now} />)
            ) : (
              <tr>
                <td colspan={7} class="muted">
                  {total ? 'No agent matches these filters.' : 'No agents yet: spawn one below.'}
                </td>
              </tr>
            )}
          </tbody>
        </table>
        {nextCursor ? (
          <p class="small">
            <a href={query({ machine: filters.machine, status: filters.status, q: filters.q, cursor: nextCursor })}>Next page →</a>
          </p>
        ) : null}
      </div>

      {readOnly ? null : (
        <div class="card">
          <h2>Spawn an agent</h2>
          <form id="spawn" class="row" style="align-items: flex-start">
            <label>
              Machine
              <br />
              <select name="machine">
                {machines.map((m) => (
                  <option value={m}>{m}</option>
                ))}
              </select>
            </label>
            <label>
              Id <span class="muted small">(optional)</span>
              <br />
              <input type="text" name="id" placeholder="generated" />
            </label>
            <label style="flex: 1; min-width: 320px">
              Input <span class="muted small">(JSON, optional)</span>
              <br />
              <textarea name="input" rows={3} style="width: 100%" placeholder='{"tasks": ["Summarize the design card."]}'></textarea>
            </label>
            <div>
              <br />
              <button type="submit">Spawn</button>
            </div>
          </form>
          {mcpServers.length > 0 ? (
            <p class="small muted" id="mcp-servers">
              MCP servers here:{' '}
              {mcpServers.map((name, i) => (
                <>
                  {i > 0 ? ', ' : ''}
                  <code>{name}</code>
                </>
              ))}
              . An <code>agent</code> is offered their tools with <code>{`"mcp": ${JSON.stringify([mcpServers[0]])}`}</code> in its input.
            </p>
          ) : null}
        </div>
      )}
    </Layout>
  );
};

import type { Child, FC } from 'hono/jsx';
import { toolKey } from '../../agents/reference/tools.js';
import type { ActorKind } from '../../durable/definition.js';
import { readAction } from '../../observability/action-outcome.js';
import type { ActionRecord } from '../../store/store.js';
import { asText, clock, pick } from './format.js';
import { argumentsText, ErrorText, Text, tokensText } from './text.js';
import { mcpToolsOf, ToolName } from './tool-name.js';

/** One action-log row, read by what its actor is: an LLM call, tool calls, an effect, or any other call. */
export const ActionRow: FC<{ agentId: string; action: ActionRecord; kind: ActorKind }> = ({ agentId, action, kind }) => {
  const { outcome, ms, attempt } = readAction(action);
  const ok = outcome === 'ok';
  const [what, result] =
    kind === 'llm' ? llmCells(action) : kind === 'tools' ? toolsCells(agentId, action) : kind === 'effect' ? effectCells(action) : otherCells(action);
  return (
    <tr data-action={action.action}>
      <td class="mono">{action.seq}</td>
      <td>
        <span class={ok ? 'ok' : 'fail'}>{ok ? '✓' : '✗'}</span> {action.action}
      </td>
      <td>{attempt ?? '—'}</td>
      <td>{what}</td>
      <td>{result}</td>
      <td class="mono">{ms === undefined ? '—' : `${ms} ms`}</td>
      <td class="small muted" title={clock(action.createdAt)}>
        {clock(action.createdAt).slice(11)}
      </td>
    </tr>
  );
};

type Cells = [what: Child, result: Child];

/** The request's last user message and its size; the answer's text or tool calls, and what it cost. */
function llmCells(action: ActionRecord): Cells {
  const { outcome, input, output } = readAction(action);
  const messages = pick(input, 'messages');
  const count = Array.isArray(messages) ? messages.length : undefined;
  const tools = pick(input, 'tools');
  // A task's first call lists the tools of the agent's MCP servers, and returns them with its answer.
  const servers = pick(input, 'mcp');
  const listed = mcpToolsOf(pick(output, 'mcpTools'));
  const lastUser = Array.isArray(messages) ? messages.findLast((m) => pick(m, 'role') === 'user') : undefined;
  // A version 2 request had `system` and `task` instead of messages.
  const system = asText(pick(input, 'system'));
  const asked = asText(pick(lastUser, 'content')) ?? asText(pick(input, 'task'));
  const what = (
    <>
      <div class="small muted">
        model {asText(pick(input, 'model')) ?? '?'}
        {count === undefined ? '' : ` · ${count} message${count === 1 ? '' : 's'}`}
        {Array.isArray(tools) && tools.length ? ` · ${tools.length} tool${tools.length === 1 ? '' : 's'}` : ''}
        {Array.isArray(servers) && servers.length ? ` · lists the tools of MCP ${servers.length === 1 ? 'server' : 'servers'} ${servers.join(', ')}` : ''}
      </div>
      {system ? <Text value={`system: ${system}`} /> : null}
      <Text value={asked} />
    </>
  );
  if (outcome !== 'ok') return [what, <ErrorText error={pick(action.result, 'error')} />];
  // A version 2 answer was the text itself.
  const content = typeof output === 'string' ? output : asText(pick(output, 'content'));
  const calls = pick(output, 'toolCalls');
  const usage = pick(output, 'usage');
  const tokens = typeof pick(usage, 'totalTokens') === 'number' ? tokensText(usage as Parameters<typeof tokensText>[0]) : undefined;
  const result = (
    <>
      {content ? <Text value={content} /> : null}
      {Array.isArray(calls) && calls.length
        ? calls.map((c) => (
            <div class="text">
              → <ToolName name={asText(pick(c, 'name'))} mcp={listed.get(asText(pick(c, 'name')) ?? '')} /> <span class="small">{shortArgs(pick(c, 'arguments'))}</span>
            </div>
          ))
        : null}
      {!content && !(Array.isArray(calls) && calls.length) ? <span class="muted">(empty answer)</span> : null}
      {tokens ? <div class="small muted">{tokens}</div> : null}
    </>
  );
  return [what, result];
}

/** Each call of one answer: its name, key and arguments; its ok/error and a short result. */
function toolsCells(agentId: string, action: ActionRecord): Cells {
  const { outcome, input, output } = readAction(action);
  const seq = pick(input, 'seq');
  const calls = Array.isArray(pick(input, 'calls')) ? (pick(input, 'calls') as unknown[]) : [];
  const results = Array.isArray(output) ? output : [];
  const mcp = mcpToolsOf(pick(input, 'tools'));
  const mcpOf = (name: string | undefined) => (name === undefined ? undefined : mcp.get(name));
  const what = calls.length ? (
    calls.map((c) => {
      const id = asText(pick(c, 'id')) ?? '?';
      return (
        <div class="call" data-call={id}>
          <ToolName name={asText(pick(c, 'name'))} mcp={mcpOf(asText(pick(c, 'name')))} /> <span class="small">{shortArgs(pick(c, 'arguments'))}</span>
          {typeof seq === 'number' ? (
            <div class="small">
              key <code>{toolKey(agentId, seq, id)}</code>
            </div>
          ) : null}
        </div>
      );
    })
  ) : (
    <span class="muted">(input not recorded)</span>
  );
  if (outcome !== 'ok') return [what, <ErrorText error={pick(action.result, 'error')} />];
  const result = results.map((r) => {
    const ok = pick(r, 'ok') === true;
    return (
      <div class="call" data-call={asText(pick(r, 'callId'))}>
        <span class={ok ? 'ok' : 'fail'}>{ok ? 'ok' : 'error'}</span> <ToolName name={asText(pick(r, 'name'))} mcp={mcpOf(asText(pick(r, 'name')))} />
        <Text value={asText(pick(r, 'content'))} max={120} />
      </div>
    );
  });
  return [what, result];
}

function effectCells(action: ActionRecord): Cells {
  const { outcome, input, output } = readAction(action);
  const key = asText(pick(output, 'idempotencyKey'));
  const webhook = asText(pick(input, 'webhook'));
  const what = (
    <>
      <div class="small muted">{webhook ? `POST ${webhook}` : 'no webhook'}</div>
      <Text value={asText(pick(input, 'task'))} max={120} />
    </>
  );
  if (outcome !== 'ok') return [what, <ErrorText error={pick(action.result, 'error')} />];
  const delivered = pick(output, 'delivered') === true;
  const result = (
    <div class="text">
      <span class="ok">{delivered ? `delivered (HTTP ${String(pick(output, 'status'))})` : 'done (nothing to deliver)'}</span>
      {key ? (
        <div class="small">
          key <code>{key}</code>
        </div>
      ) : null}
    </div>
  );
  return [what, result];
}

function otherCells(action: ActionRecord): Cells {
  const { outcome, output } = readAction(action);
  const what = <Text value={asText(pick(action.payload, 'input') ?? action.payload)} />;
  const error = pick(action.result, 'error');
  return [what, outcome === 'ok' ? <Text value={asText(output)} /> : <ErrorText error={error ?? action.result} />];
}

function shortArgs(value: unknown): string {
  const text = typeof value === 'string' ? argumentsText(value) : (asText(value) ?? '');
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}

/**
 * The reference agent's MCP tools: listed for a task's first LLM call (and committed with its
 * answer, in `context.mcpTools`), then offered and run from that record, so that every later call
 * of the task, and an agent restored anywhere, offers the same tools. A call is a tool call like any
 * other (tools.ts): keyed, recorded once; the key also goes in the request's `_meta`.
 */
import type { z } from 'zod';
import { StepError } from '../../core/errors.js';
import type { LlmAnswer, ToolCall } from '../../llm/client.js';
import type { McpServers, McpToolInfo } from '../../mcp/types.js';
import { ToolStepError, toolDefinitions } from './steps.js';
import type { AgentContext, AgentInput, LlmStepInput, LlmStepOutput, ToolResult, ToolSpec } from './types.js';

/** Every tool offered to the model now: the agent's own (input and code tools), then the MCP tools listed for the task. */
export function offeredTools(context: Pick<AgentContext, 'tools' | 'mcpTools'>): ToolSpec[] {
  return context.mcpTools?.length ? [...context.tools, ...context.mcpTools] : context.tools;
}

/** The servers whose tools the next LLM call must list: the agent's, when the current task has no list yet. */
export function mcpServersToList(context: Pick<AgentContext, 'mcp' | 'mcpTools'>): string[] | undefined {
  return context.mcp?.length && !context.mcpTools ? context.mcp : undefined;
}

/** What ends with a task: its list (only when there is one, so an agent without MCP keeps its context as it was). */
export function endOfMcpTask(context: Pick<AgentContext, 'mcpTools'>): Partial<AgentContext> {
  return context.mcpTools ? { mcpTools: null } : {};
}

export function toMcpToolSpec(info: McpToolInfo): ToolSpec {
  return { name: info.name, description: info.description, parameters: info.parameters, approval: info.approval, mcp: { server: info.server, tool: info.tool } };
}

/**
 * The tools of `servers`, as the agent keeps them. A tool whose name another tool of the agent has
 * already (an HTTP tool of the input, a code tool) is not offered. No servers configured here:
 * nothing listed. A server that cannot be reached: a transient ToolStepError (a failure of the tool
 * step, although it happens before the LLM call; the call is retried with the listing).
 */
export async function listMcpTools(mcp: McpServers | undefined, servers: readonly string[], taken: readonly { name: string }[], signal: AbortSignal): Promise<ToolSpec[]> {
  if (!mcp) return [];
  const names = new Set(taken.map((t) => t.name));
  let listed: McpToolInfo[];
  try {
    listed = await mcp.listTools(servers, signal);
  } catch (err) {
    if (err instanceof StepError) throw ToolStepError.from(err);
    throw new ToolStepError('transient', 'mcp_unreachable', `The MCP servers ${servers.map((s) => `"${s}"`).join(', ')} could not be listed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  return listed.filter((t) => !names.has(t.name)).map(toMcpToolSpec);
}

/**
 * One call of an MCP tool, its arguments already checked against the tool's parameters. What the
 * server answers with `isError`, a tool it no longer offers, a server no longer configured: an
 * error result for the model. Unreachable, dead mid-call, timed out: a transient StepError.
 */
export async function callMcpTool(
  mcp: McpServers | undefined,
  spec: ToolSpec & { mcp: { server: string; tool: string } },
  call: ToolCall,
  args: unknown,
  options: { idempotencyKey: string; signal: AbortSignal; timeoutMs: number },
): Promise<ToolResult> {
  if (!mcp) {
    return { callId: call.id, name: call.name, ok: false, content: JSON.stringify({ error: `The MCP server "${spec.mcp.server}" is not configured here any more.` }) };
  }
  const params = typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
  try {
    const outcome = await mcp.callTool(spec.mcp.server, spec.mcp.tool, params, options);
    return { callId: call.id, name: call.name, ok: outcome.ok, content: outcome.content };
  } catch (err) {
    if (err instanceof StepError) throw err;
    // Whatever else a source throws (a library user's own McpServers): the server could not be used now.
    throw new StepError('transient', 'mcp_unreachable', `The MCP server "${spec.mcp.server}" could not be reached: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/**
 * The `callLlm` actor with MCP tools: when its input names servers to list (a task's first call),
 * lists their tools, offers them besides the others, and returns them with the answer, for the
 * chart to commit. Any other call is `call` as it is.
 */
export async function withMcpTools(
  mcp: McpServers | undefined,
  input: LlmStepInput,
  signal: AbortSignal,
  call: (input: LlmStepInput) => Promise<LlmAnswer>,
): Promise<LlmStepOutput> {
  if (!input.mcp) return call(input);
  const { mcp: servers, ...rest } = input;
  const mcpTools = await listMcpTools(mcp, servers, rest.tools ?? [], signal);
  const tools = [...(rest.tools ?? []), ...toolDefinitions(mcpTools)];
  const answer = await call({ ...rest, ...(tools.length ? { tools } : {}) });
  return { ...answer, mcpTools };
}

/** Spawn input: every server of `mcp` is one configured here (an API caller names servers, never commands). */
export function checkMcpServers(mcp: McpServers | undefined) {
  return (input: Pick<AgentInput, 'mcp'>, ctx: z.RefinementCtx): void => {
    const known = mcp?.names ?? [];
    for (const [i, server] of (input.mcp ?? []).entries()) {
      if (known.includes(server)) continue;
      ctx.addIssue({
        code: 'custom',
        path: ['mcp', i],
        message: `"${server}" is not an MCP server configured here (${known.length ? `configured: ${known.join(', ')}` : 'none is configured'})`,
      });
    }
  };
}

/**
 * The reference agent's pure rules, apart from the chart's shape: how a step's failure reads, what a
 * task's exchange starts from, what an answer asks for, how usage adds up. No I/O.
 */
import { StepError } from '../../core/errors.js';
import { ID_PATTERN } from '../../core/ids.js';
import type { ChatMessage, LlmAnswer, TokenUsage, ToolCall, ToolDefinition } from '../../llm/client.js';
import type { AgentContext, AgentStep, LastError, PendingApproval, ToolSpec, UsageTotals } from './types.js';

/** The name the reference agent is registered under (agentDefinition). */
export const AGENT_MACHINE_NAME = 'agent';

/** LLM calls one task may make unless its input says otherwise (contract: `maxTurns`). */
export const DEFAULT_MAX_TURNS = 8;

export const NO_TOTALS: UsageTotals = { promptTokens: 0, completionTokens: 0, totalTokens: 0, llmCalls: 0 };

export function addUsage(totals: UsageTotals, usage: TokenUsage): UsageTotals {
  return {
    promptTokens: totals.promptTokens + usage.promptTokens,
    completionTokens: totals.completionTokens + usage.completionTokens,
    totalTokens: totals.totalTokens + usage.totalTokens,
    llmCalls: totals.llmCalls + 1,
  };
}

/** The request's messages: the system prompt, then the exchange so far. */
export function requestMessages(context: Pick<AgentContext, 'system' | 'messages'>): ChatMessage[] {
  return context.system ? [{ role: 'system', content: context.system }, ...context.messages] : context.messages;
}

export function toolDefinitions(tools: readonly ToolSpec[]): ToolDefinition[] {
  return tools.map((t) => ({ name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters }));
}

/** The last answer's calls that have no tool message yet (the messages after the answer are its results). */
export function unansweredCalls(messages: readonly ChatMessage[]): ToolCall[] {
  const answerAt = messages.findLastIndex((m) => m.role === 'assistant');
  const answer = messages[answerAt];
  if (!answer || answer.role !== 'assistant' || !answer.toolCalls) return [];
  const answered = new Set(messages.slice(answerAt + 1).flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
  return answer.toolCalls.filter((c) => !answered.has(c.id));
}

/**
 * Whether the exchange ends in an answer the agent still acts on: tool calls without results, or a
 * final answer to deliver. After a failed LLM call it ends in the task or the last tool results.
 */
export function hasAnswerToActOn(messages: readonly ChatMessage[]): boolean {
  return messages.at(-1)?.role === 'assistant' || unansweredCalls(messages).length > 0;
}

/** The assistant message an answer adds to the exchange. */
export function answerMessage(answer: LlmAnswer): ChatMessage {
  return { role: 'assistant', content: answer.content, ...(answer.toolCalls.length ? { toolCalls: answer.toolCalls } : {}) };
}

/** The calls of an answer that wait for a person: those of tools marked `approval`. */
export function approvalsNeeded(calls: readonly ToolCall[], tools: readonly ToolSpec[]): PendingApproval[] {
  return calls
    .filter((call) => tools.some((t) => t.name === call.name && t.approval))
    .map((call) => ({ callId: call.id, name: call.name, arguments: parseArguments(call.arguments) }));
}

/** The parameters of every agent tool (contract: "Agents as tools"). */
export const TASK_PARAMETERS: Record<string, unknown> = {
  type: 'object',
  properties: { task: { type: 'string', description: 'What to ask the agent, as a complete task.' } },
  required: ['task'],
  additionalProperties: false,
};

/** A call of an agent tool that starts a child: its task, and the child's id. */
export interface AgentCall {
  callId: string;
  childId: string;
  machine: string;
  input: Record<string, unknown>;
}

/**
 * The last answer's calls of agent tools that start a child: not rejected by a person, with a
 * `task`. Any other (bad arguments, rejected) goes through the tool runner, which tells the model why.
 * A reference agent child is spawned with `finishAfterTasks`: once it has answered its one task it
 * has nothing more to do (no one sends it another), so it finishes rather than wait in `idle`
 * forever. The tool's own `input` may say otherwise; a child of another machine ends on its own.
 */
export function agentCallsToStart(context: Pick<AgentContext, 'messages' | 'tools' | 'decisions' | 'current'>, agentId: string): AgentCall[] {
  const seq = context.current?.seq ?? 0;
  return unansweredCalls(context.messages).flatMap((call) => {
    const tool = context.tools.find((t) => t.name === call.name);
    const task = agentTask(call.arguments);
    if (!tool?.agent || task === undefined || context.decisions[call.id]?.approved === false) return [];
    const finishes = tool.agent.machine === AGENT_MACHINE_NAME ? { finishAfterTasks: true } : {};
    return [{ callId: call.id, childId: childAgentId(agentId, seq, call.id), machine: tool.agent.machine, input: { ...finishes, ...tool.agent.input, tasks: [task] } }];
  });
}

/** How long an agent tool's child is waited for unless the tool says (`agent.timeoutMs`). */
export const DEFAULT_AGENT_TOOL_TIMEOUT_MS = 10 * 60_000;

/** How long to wait for the children of the last answer's agent calls: the longest of their tools' limits. */
export function agentCallsTimeoutMs(context: Pick<AgentContext, 'messages' | 'tools'>): number {
  const limits = unansweredCalls(context.messages).flatMap((call) => {
    const agent = context.tools.find((t) => t.name === call.name)?.agent;
    return agent ? [agent.timeoutMs ?? DEFAULT_AGENT_TOOL_TIMEOUT_MS] : [];
  });
  return limits.length > 0 ? Math.max(...limits) : DEFAULT_AGENT_TOOL_TIMEOUT_MS;
}

/** The task of an agent tool call, when its arguments are `{"task": "<non-empty>"}`. */
export function agentTask(argumentsText: string): string | undefined {
  const args = parseArguments(argumentsText) as { task?: unknown } | null;
  return typeof args === 'object' && args !== null && typeof args.task === 'string' && args.task.trim() !== '' ? args.task : undefined;
}

/**
 * A call's child agent id: from the call's key (`<agentId>:<seq>:<callId>`), so a crash cannot make
 * two; hashed where the key would not be a valid id (too long, or a provider's call id with other characters).
 */
export function childAgentId(agentId: string, seq: number, callId: string): string {
  const key = `${agentId}:${seq}:${callId}`;
  if (ID_PATTERN.test(key)) return key;
  return `${agentId.slice(0, 96)}:${seq}:${fnv1a(callId)}`.slice(0, 128);
}

/** 32-bit FNV-1a as hex: a short stable name (no crypto: the chart stays pure). */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return hash.toString(16).padStart(8, '0');
}

/** What a child's report makes of the call's tool message. */
export function childReportContent(event: { type: string; response?: unknown; output?: unknown; error?: { message?: unknown } }): string {
  if (event.type === 'agent.response') return String(event.response ?? '');
  if (event.type === 'agent.done') {
    const output = event.output ?? null;
    return output === null ? JSON.stringify({ error: 'The agent finished without an answer.' }) : typeof output === 'string' ? output : JSON.stringify(output);
  }
  return JSON.stringify({ error: `The agent failed: ${String(event.error?.message ?? 'unknown error')}` });
}

/** The model's argument text as JSON, or the text itself when it is not JSON (shown to a person as it is). */
export function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * A failure of the tool step raised by another step's actor: the MCP servers whose tools a task's
 * first LLM call offers are listed by that call, but a server that cannot be reached is a tool
 * failure (its lastError says "tool"; `retry` still asks the LLM, there being no answer yet).
 */
export class ToolStepError extends StepError {
  static from(error: StepError): ToolStepError {
    return new ToolStepError(error.kind, error.code, error.message, {
      ...(error.status === undefined ? {} : { status: error.status }),
      ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
      cause: error,
    });
  }
}

/** Errors reach the chart as whatever the actor threw; only a StepError-shaped value says "transient". */
export function failureKind(error: unknown): 'transient' | 'permanent' {
  return isStepErrorLike(error) && error.kind === 'transient' ? 'transient' : 'permanent';
}

export function retryAfterMs(error: unknown): number | undefined {
  return isStepErrorLike(error) ? error.retryAfterMs : undefined;
}

export function toLastError(step: AgentStep, error: unknown, attempts: number): LastError {
  if (isStepErrorLike(error)) {
    return {
      kind: error.kind,
      // An error of another step than the actor that threw it (MCP servers listed before an LLM call).
      step: error instanceof ToolStepError ? 'tool' : step,
      code: error.code,
      message: error.message,
      ...(error.status === undefined ? {} : { status: error.status }),
      attempts,
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { kind: 'permanent', step, code: 'unexpected_error', message, attempts };
}

function isStepErrorLike(error: unknown): error is Pick<StepError, 'kind' | 'code' | 'message' | 'status' | 'retryAfterMs'> {
  if (error instanceof StepError) return true;
  if (typeof error !== 'object' || error === null) return false;
  const kind = (error as { kind?: unknown }).kind;
  return (kind === 'transient' || kind === 'permanent') && typeof (error as { message?: unknown }).message === 'string';
}

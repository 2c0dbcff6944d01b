/**
 * The reference agent's pure rules, apart from the chart's shape: how a step's failure reads, what a
 * task's exchange starts from, what an answer asks for, how usage adds up. No I/O.
 */
import { StepError } from '../../core/errors.js';
import type { ChatMessage, LlmAnswer, TokenUsage, ToolCall, ToolDefinition } from '../../llm/client.js';
import type { AgentContext, AgentStep, LastError, PendingApproval, ToolSpec, UsageTotals } from './types.js';

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

/** The tool calls of the exchange's last message, when it is an answer that asks for them (none yet made). */
export function openToolCalls(messages: readonly ChatMessage[]): ToolCall[] {
  const last = messages.at(-1);
  return last?.role === 'assistant' ? (last.toolCalls ?? []) : [];
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

/** The model's argument text as JSON, or the text itself when it is not JSON (shown to a person as it is). */
export function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
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
      step,
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

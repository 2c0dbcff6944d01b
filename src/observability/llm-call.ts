/**
 * How metrics and traces read the row of an actor a machine declares `llm`: the model asked (its
 * input's `model`) and the tokens its answer used (its output's `usage`, as the LLM port has it).
 */
import type { ActionReading } from './action-outcome.js';

export interface LlmCallReading {
  model: string | undefined;
  /** Undefined when the call failed or its provider sent no usage. */
  usage: { inputTokens: number; outputTokens: number } | undefined;
}

export function readLlmCall(reading: ActionReading): LlmCallReading {
  const model = reading.input?.model;
  const output = reading.output;
  const usage = output && typeof output === 'object' ? (output as { usage?: unknown }).usage : undefined;
  const tokens = usage && typeof usage === 'object' ? (usage as { promptTokens?: unknown; completionTokens?: unknown }) : undefined;
  return {
    model: typeof model === 'string' ? model : undefined,
    usage: tokens ? { inputTokens: count(tokens.promptTokens), outputTokens: count(tokens.completionTokens) } : undefined,
  };
}

/** A token count as a counter can take it: a provider's missing or odd field is 0. */
function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

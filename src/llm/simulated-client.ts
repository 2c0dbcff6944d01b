import { setTimeout as sleep } from 'node:timers/promises';
import { evaluate } from '../core/arithmetic.js';
import { StepError } from '../core/errors.js';
import { nextRandom } from '../core/random.js';
import { lastUserText, type ChatMessage, type LlmAnswer, type LlmClient, type LlmRequest, type TokenUsage, type ToolCall } from './client.js';

export interface SimulatedLlmOptions {
  /** Share of calls that fail with a transient error (0–1). */
  faultRate?: number;
  /** Seed for the faults, so a run can be reproduced. */
  seed?: number;
  latencyMs?: number;
  /** Pause between two streamed words (default 0: the words are streamed at once). `serve` sets one, so text is seen appearing. */
  wordDelayMs?: number;
}

/** Arithmetic in a task (`what is 12 * (3 + 4)?`): the simulated model hands it to a `calculator` tool when one is offered. */
const ARITHMETIC = /[-+(]*\d+(?:\.\d+)?(?:\s*[-+*/]\s*[(]*\s*\d+(?:\.\d+)?\s*[)]*)+/;

/**
 * The embedded default when no API is configured: deterministic answers, optional seeded faults,
 * and deterministic tool use so that the tool loop can be seen without a model. On a new task it
 * calls the `calculator` tool (when offered) with the arithmetic the task holds, and every other
 * offered tool whose name the task mentions, in one answer, with `{ text }`: its answer to the task
 * (see `answerToPass`), not the task; once the results are in, it answers with text that quotes
 * them, streamed word by word. Usage counts a token per 4 characters.
 */
export function createSimulatedLlm(options: SimulatedLlmOptions = {}): LlmClient {
  const faultRate = options.faultRate ?? 0;
  const latencyMs = options.latencyMs ?? 0;
  const wordDelayMs = options.wordDelayMs ?? 0;
  let rng = options.seed ?? 1;
  return {
    kind: 'simulated',
    description: `simulated LLM (no OPENAI_API_KEY/OPENAI_BASE_URL set; fault rate ${faultRate})`,
    async complete(request: LlmRequest, signal: AbortSignal, onDelta?: (text: string) => void): Promise<LlmAnswer> {
      if (latencyMs > 0) await sleep(latencyMs, undefined, { signal });
      signal.throwIfAborted();
      if (faultRate > 0) {
        const draw = nextRandom(rng);
        rng = draw.state;
        if (draw.value < faultRate) {
          throw new StepError('transient', 'llm_unavailable', 'The simulated LLM failed on purpose (fault rate).', { status: 503 });
        }
      }
      const answer = simulatedAnswer(request);
      if (onDelta && answer.content) {
        for (const word of words(answer.content)) {
          if (wordDelayMs > 0) await sleep(wordDelayMs, undefined, { signal });
          signal.throwIfAborted();
          onDelta(word);
        }
      }
      return answer;
    },
  };
}

function simulatedAnswer(request: LlmRequest): LlmAnswer {
  const task = lastUserText(request);
  const last = request.messages.at(-1);
  if (last?.role === 'user') {
    const calls = toolCallsFor(task, request);
    if (calls.length > 0) return { content: null, toolCalls: calls, usage: usageOf(request.messages, JSON.stringify(calls)) };
  }
  const results = last?.role === 'tool' ? toolResultsOfLastTurn(request.messages) : [];
  const content =
    `Simulated answer (${request.model}) to: ${task}` + (results.length ? ` — tool results: ${results.join('; ')}` : '');
  return { content, toolCalls: [], usage: usageOf(request.messages, content) };
}

/** Each word with the spaces after it: "a b  c" → "a ", "b  ", "c". */
function words(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

function toolCallsFor(task: string, request: LlmRequest): ToolCall[] {
  const turn = request.messages.filter((m) => m.role === 'assistant').length;
  const calls: Omit<ToolCall, 'id'>[] = [];
  for (const tool of request.tools ?? []) {
    if (tool.name === 'calculator') {
      const expression = ARITHMETIC.exec(task)?.[0];
      if (expression) calls.push({ name: tool.name, arguments: JSON.stringify({ expression: expression.trim() }) });
    } else if (task.includes(tool.name)) {
      calls.push({ name: tool.name, arguments: JSON.stringify({ text: answerToPass(task, tool.name) }) });
    }
  }
  return calls.map((call, i) => ({ id: `call_${turn}_${i}`, ...call }));
}

/**
 * What the simulated model hands a tool the task names (`publish_note`): its answer, not the question.
 * With arithmetic in the task, the result the calculator is asked for in the same answer
 * ("12 * (3 + 4) = 84", from the calculator's own `evaluate`); otherwise what the task says after the
 * tool's name ("publish_note: the release is out" → "the release is out"); the task when that is empty.
 */
export function answerToPass(task: string, toolName: string): string {
  const expression = ARITHMETIC.exec(task)?.[0]?.trim();
  if (expression) {
    try {
      return `${expression} = ${evaluate(expression)}`;
    } catch {
      // Not arithmetic the calculator takes (it will say why): what follows the tool's name, then.
    }
  }
  const after = task.slice(task.indexOf(toolName) + toolName.length).replace(/^[\s:,\-–—]+/, '').trim();
  return after || task;
}

function toolResultsOfLastTurn(messages: readonly ChatMessage[]): string[] {
  const results: string[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i]!.role === 'tool'; i--) results.unshift(messages[i]!.content!);
  return results;
}

function usageOf(messages: readonly ChatMessage[], answer: string): TokenUsage {
  const promptTokens = Math.ceil(messages.reduce((n, m) => n + (m.content?.length ?? 0), 0) / 4);
  const completionTokens = Math.ceil(answer.length / 4);
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
}

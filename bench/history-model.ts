/**
 * The model and the tool of the `history` workload: a long conversation whose every task is one
 * tool call (~1 KB JSON result) and one ~1 KB text answer. Deterministic, and different per task,
 * so nothing in storage can shrink a turn to a reference to an earlier identical one.
 */
import { z } from 'zod';
import { tool, type CodeTool } from '../src/agents/reference/tools.js';
import { lastUserText, textAnswer, type LlmAnswer, type LlmClient, type LlmRequest, type TokenUsage } from '../src/llm/client.js';
import { nextRandom } from '../src/core/random.js';

export const HISTORY_TOOL = 'lookup_records';
const ANSWER_BYTES = 1024;
const RESULT_BYTES = 1024;

const WORDS = (
  'ledger revenue quarter margin forecast region churn backlog invoice vendor audit budget cohort pipeline ' +
  'renewal discount freight tariff payroll capex opex accrual variance baseline target segment retention ' +
  'uplift shortfall surplus inventory warehouse shipment contract clause supplier customer partner north ' +
  'south east west growth decline steady board summary risk'
).split(' ');

export function taskText(k: number): string {
  return `Task ${k}: look up the records for batch ${k} with ${HISTORY_TOOL} and summarise them for the board.`;
}

export function toolArguments(k: number): string {
  return JSON.stringify({ batch: k, query: `records of batch ${k}` });
}

/** The tool's result for task k: ~1 KB of JSON once serialised (as the library stores it). */
export function toolResult(k: number): { batch: number; records: { id: string; label: string; amount: number; region: string }[] } {
  const words = wordStream(k * 2 + 1);
  const records: { id: string; label: string; amount: number; region: string }[] = [];
  const result = { batch: k, records };
  while (JSON.stringify(result).length < RESULT_BYTES - 80) {
    records.push({ id: `r${k}-${records.length}`, label: `${words()} ${words()}`, amount: Math.round(words.value() * 1e6) / 100, region: words() });
  }
  return result;
}

/** The final answer of task k: ~1 KB of seeded words. */
export function answerText(k: number): string {
  const words = wordStream(k * 2);
  let text = `Summary of batch ${k}:`;
  while (text.length < ANSWER_BYTES) text += ` ${words()}`;
  return text;
}

/** What the conversation itself weighs: task, tool call (name and arguments), tool result, answer. */
export function transcriptBytesOf(tasks: number): number {
  let bytes = 0;
  for (let k = 1; k <= tasks; k++) {
    bytes += [taskText(k), HISTORY_TOOL, toolArguments(k), JSON.stringify(toolResult(k)), answerText(k)].reduce((n, s) => n + Buffer.byteLength(s), 0);
  }
  return bytes;
}

/** Counts what ran, so the workload can check that every task took its two turns and its call. */
export interface HistoryCounts {
  llmCalls: number;
  toolCalls: number;
}

/** For each task: first a call of the tool, then (after its result) the final text. */
export function historyLlm(counts: HistoryCounts): LlmClient {
  return {
    kind: 'simulated',
    description: 'history bench model (one tool call, then ~1 KB of text, per task)',
    complete(request: LlmRequest): Promise<LlmAnswer> {
      counts.llmCalls++;
      const k = taskNumber(lastUserText(request));
      const last = request.messages.at(-1);
      const usage = usageOf(request);
      if (last?.role === 'user') {
        return Promise.resolve({ content: null, toolCalls: [{ id: `call_${k}`, name: HISTORY_TOOL, arguments: toolArguments(k) }], usage });
      }
      if (last?.role === 'tool') return Promise.resolve(textAnswer(answerText(k), usage));
      return Promise.reject(new Error(`The history model was asked after a ${last?.role ?? 'missing'} message.`));
    },
  };
}

export function historyTool(counts: HistoryCounts): CodeTool {
  return tool({
    name: HISTORY_TOOL,
    description: 'The records of one batch.',
    parameters: z.object({ batch: z.number().int(), query: z.string() }),
    execute: ({ batch }) => (counts.toolCalls++, toolResult(batch)),
  });
}

function taskNumber(text: string): number {
  const match = /^Task (\d+):/.exec(text);
  if (!match) throw new Error(`Not a task of the history bench: ${text.slice(0, 80)}`);
  return Number(match[1]);
}

function usageOf(request: LlmRequest): TokenUsage {
  const promptTokens = Math.ceil(request.messages.reduce((n, m) => n + (m.content?.length ?? 0), 0) / 4);
  return { promptTokens, completionTokens: 256, totalTokens: promptTokens + 256 };
}

/** Seeded words, with the last draw's value for numbers. */
function wordStream(seed: number): (() => string) & { value: () => number } {
  let state = seed;
  let last = 0;
  const next = () => {
    const draw = nextRandom(state);
    state = draw.state;
    last = draw.value;
    return WORDS[Math.floor(draw.value * WORDS.length)]!;
  };
  return Object.assign(next, { value: () => last });
}

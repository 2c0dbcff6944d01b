/**
 * The tools `serve` registers when it runs the simulated LLM, so that `npm start` with no API key
 * shows the tool loop: a calculator the simulated model calls for arithmetic in a task, and a note
 * board whose posts need a person's approval. Both are harmless: nothing leaves the process.
 */
import { z } from 'zod';
import { tool, type CodeTool } from './tools.js';
import { evaluate } from '../../core/arithmetic.js';

export const calculatorTool: CodeTool = tool({
  name: 'calculator',
  description: 'Evaluates an arithmetic expression with + - * / and parentheses, e.g. "12 * (3 + 4)".',
  parameters: z.object({ expression: z.string().min(1).max(200) }),
  execute: ({ expression }) => ({ expression, value: evaluate(expression) }),
});

/** Notes posted by `publish_note` in this process (a stand-in for an action worth a person's approval). */
export const publishedNotes: { key: string; text: string }[] = [];

export const publishNoteTool: CodeTool = tool({
  name: 'publish_note',
  description: 'Publishes a short note on the team board. A person approves each note first.',
  parameters: z.object({ text: z.string().min(1).max(2000) }),
  approval: true,
  execute: ({ text }, { idempotencyKey }) => {
    // Once per key, as a real publisher keyed by the call would: a re-run after a crash posts nothing new.
    if (!publishedNotes.some((n) => n.key === idempotencyKey)) publishedNotes.push({ key: idempotencyKey, text });
    return { published: true, key: idempotencyKey };
  },
});

export const BUILTIN_TOOLS: readonly CodeTool[] = [calculatorTool, publishNoteTool];

export { evaluate };

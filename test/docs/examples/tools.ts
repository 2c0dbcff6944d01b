import { agentDefinition, createRuntime, createSimulatedLlm, tool } from '../../../src/index.js';
import { openSqliteStore } from '../../../src/store/sqlite/index.js';
import { z } from 'zod';

// A tool registered in code: its zod parameters become the JSON Schema the model is shown, and
// the model's arguments are checked against them before `execute` runs.
const lookup = tool({
  name: 'lookup',
  description: 'Finds a customer by the text of the request',
  parameters: z.object({ text: z.string() }),
  execute: ({ text }, { idempotencyKey }) => ({ customer: text.includes('Ana') ? 'Ana Lima, #4711' : null, key: idempotencyKey }),
});

const runtime = await createRuntime({
  // A file of its own: a SQLite file has one writer, and `npm start` runs ./data/agents.db.
  store: await openSqliteStore(process.env.DURABLE_AGENTS_DB ?? './data/tools.db'),
  // The simulated model calls a tool whose name its task mentions; a real model decides for itself.
  machines: [agentDefinition({ llm: createSimulatedLlm(), tools: [lookup] })],
});

await runtime.spawn('agent', { id: 'support-1', input: { tasks: ['Please lookup Ana and greet her'] } });
// The current view if it already matches (run again, the task is done), else the first one after a commit that does.
const answered = await runtime.waitFor('support-1', (view) => view.state === 'idle' && view.progress >= 1);

// The task's response, with the LLM calls it took and their tokens; and each tool call's result.
console.log('results', (answered.context as { results: unknown[] }).results);
for (const { action, result } of await runtime.actions('support-1')) if (action === 'runTools') console.log('tools', result);
await runtime.close();

import { agentDefinition, createRuntime, createSimulatedLlm, tool, type AgentView } from '../../../src/index.js';
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
  store: await openSqliteStore(process.env.DURABLE_AGENTS_DB ?? './data/agents.db'),
  // The simulated model calls a tool whose name its task mentions; a real model decides for itself.
  machines: [agentDefinition({ llm: createSimulatedLlm(), tools: [lookup] })],
});

const answered = new Promise<AgentView>((resolve) => {
  const unwatch = runtime.watch('support-1', (view) => {
    if (view.state !== 'idle' || view.progress < 1) return;
    unwatch();
    resolve(view);
  });
});
await runtime.spawn('agent', { id: 'support-1', input: { tasks: ['Please lookup Ana and greet her'] } });

// The task's response, with the LLM calls it took and their tokens; and each tool call's result.
console.log('results', ((await answered).context as { results: unknown[] }).results);
for (const { action, result } of await runtime.actions('support-1')) if (action === 'runTools') console.log('tools', result);
await runtime.close();

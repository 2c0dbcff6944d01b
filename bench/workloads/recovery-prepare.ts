/** Leaves AGENTS agents active mid-task (each waiting on its LLM call), then waits to be SIGKILLed. */
import type { LlmClient } from '../../src/llm/client.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createRuntime } from '../../src/runtime/runtime.js';

const [file, count] = process.argv.slice(2) as [string, string];
const agents = Number(count);
let calls = 0;
const never: LlmClient = {
  kind: 'simulated',
  description: 'never answers',
  complete: () => {
    if (++calls === agents) process.stdout.write('ready\n');
    return new Promise(() => {});
  },
};
// Room in the LLM gate for every agent's call (the default lets 16 through): each one must be
// waiting on its own call, not on a turn at the gate, when this process is killed.
const runtime = await createRuntime({ store: await openSqliteStore(file), machines: [agentDefinition({ llm: never })], llmLimits: { concurrency: agents } });
const input = { tasks: ['Summarise the attached quarterly figures for the board, in three bullet points.'] };
setInterval(() => {}, 60_000); // stay alive until killed
for (let i = 0; i < agents; i += 500) {
  await Promise.all(Array.from({ length: Math.min(500, agents - i) }, (_, j) => runtime.spawn('agent', { id: `agent-${i + j}`, input })));
}

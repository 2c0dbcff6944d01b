import { agentDefinition, createOpenAiClient, createRuntime, createSimulatedLlm } from '../../../src/index.js';
import { openSqliteStore } from '../../../src/store/sqlite/index.js';

// The OpenAI API when a key is set; otherwise the built-in simulated LLM (deterministic text).
const apiKey = process.env.OPENAI_API_KEY;
const llm = apiKey ? createOpenAiClient({ apiKey }) : createSimulatedLlm();

// Opens (or creates) the file and restores every active agent from its last checkpoint. A file of its
// own: a SQLite file has one writer, and `npm start` runs ./data/agents.db.
const runtime = await createRuntime({
  store: await openSqliteStore(process.env.DURABLE_AGENTS_DB ?? './data/library.db'),
  machines: [agentDefinition({ llm })],
});

await runtime.spawn('agent', { id: 'a1', input: { tasks: ['Summarize the report'] } }); // once committed
// The first view that matches: the current one (run again, the agent already rests), else the view
// after the commit that gets it there.
const rested = await runtime.waitFor('a1', (view) => view.state === 'idle');
await runtime.send('a1', { type: 'task.add', task: 'Extract the entities' }); // once in the inbox
// Resting again with one more task done (right after the send, the view is still the one above).
const done = await runtime.waitFor('a1', (view) => view.state === 'idle' && view.progress > rested.progress, { timeoutMs: 60_000 });
console.log('progress', done.progress);

// Every LLM call and side effect, with its input and result, oldest first.
for (const { action, result } of await runtime.actions('a1')) console.log(action, result);
await runtime.close();

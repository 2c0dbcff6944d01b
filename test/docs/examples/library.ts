import { agentDefinition, createOpenAiClient, createRuntime, createSimulatedLlm, type AgentView } from '../../../src/index.js';
import { openSqliteStore } from '../../../src/store/sqlite/index.js';

// The OpenAI API when a key is set; otherwise the built-in simulated LLM (deterministic text).
const apiKey = process.env.OPENAI_API_KEY;
const llm = apiKey ? createOpenAiClient({ apiKey }) : createSimulatedLlm();

// Opens (or creates) the file and restores every active agent from its last checkpoint.
const runtime = await createRuntime({
  store: await openSqliteStore(process.env.DURABLE_AGENTS_DB ?? './data/agents.db'),
  machines: [agentDefinition({ llm })],
});

// A view after every committed transition: resolve once the agent rests with its tasks done.
const finished = new Promise<AgentView>((resolve) => {
  const unwatch = runtime.watch('a1', (view) => {
    if (view.state !== 'idle' || view.progress < 2) return;
    unwatch();
    resolve(view);
  });
});

await runtime.spawn('agent', { id: 'a1', input: { tasks: ['Summarize the report'] } }); // once committed
await runtime.send('a1', { type: 'task.add', task: 'Extract the entities' }); // once in the inbox
console.log('progress', (await finished).progress);

// Every LLM call and side effect, with its input and result, oldest first.
for (const { action, result } of await runtime.actions('a1')) console.log(action, result);
await runtime.close();

import { agentDefinition, createMcpServers, createRuntime, createSimulatedLlm, type AgentView } from 'durable-agents';
import { openSqliteStore } from 'durable-agents/sqlite';

// MCP servers are configured where the runtime runs: an agent's input names servers, never commands.
// One connection per server, opened at first use and shared by all agents.
const mcp = createMcpServers({
  files: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', process.env.NOTES_DIR ?? './notes'] },
});
const runtime = await createRuntime({
  store: await openSqliteStore(process.env.DURABLE_AGENTS_DB ?? './data/agents.db'),
  machines: [agentDefinition({ llm: createSimulatedLlm(), mcp })],
});

const answered = new Promise<AgentView>((resolve) => {
  const unwatch = runtime.watch('notes-1', (view) => {
    if (view.state !== 'idle' || view.progress < 1) return;
    unwatch();
    resolve(view);
  });
});
// The model is offered the tools of `files` as `files__<tool>` (the simulated one calls the tool its task names).
await runtime.spawn('agent', { id: 'notes-1', input: { tasks: ['Please files__list_allowed_directories'], mcp: ['files'] } });

console.log('results', ((await answered).context as { results: unknown[] }).results);
for (const { action, result } of await runtime.actions('notes-1')) if (action === 'runTools') console.log('tools', result);
// Whoever created the servers closes them: after the runtime, so that no call of an agent is cut short.
await runtime.close();
await mcp.close();

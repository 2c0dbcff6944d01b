/**
 * The process the crash test kills. It opens the SQLite file (recovering every active agent),
 * then executes commands read from stdin, one JSON object per line, printing `{"ack":n}` once a
 * command is committed. Nothing else: all checks happen in the parent, which outlives every kill.
 */
import readline from 'node:readline';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import { openSqliteStore } from '../../src/persistence/sqlite/sqlite-store.js';
import { agentDefinition } from '../../src/runtime/agent-definition.js';
import { createRuntime } from '../../src/runtime/runtime.js';

export type WorkerCommand =
  | { n: number; op: 'spawn'; id: string; tasks: string[]; webhook: string }
  | { n: number; op: 'add'; id: string; task: string };

const [db, llmUrl, synchronous, commitDelay] = process.argv.slice(2) as [string, string, 'normal' | 'full', string];
const store = await openSqliteStore(db, { synchronous });
// A slow disk (or a remote database): every commit takes this long, which widens the window in
// which an effect could overtake the checkpoint it depends on, were the runtime to allow it.
const delayMs = Number(commitDelay);
if (delayMs > 0) {
  const commit = store.commit.bind(store);
  store.commit = async (writes) => {
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    return commit(writes);
  };
}
const runtime = await createRuntime({
  store,
  machines: [
    agentDefinition({
      llm: createOpenAiClient({ baseURL: llmUrl, apiKey: 'test' }),
      defaults: { maxAttempts: 12, baseDelayMs: 5, maxDelayMs: 50, timeoutMs: 2000 },
    }),
  ],
});
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const command = JSON.parse(line) as WorkerCommand;
  if (command.op === 'spawn') {
    await runtime.spawn('agent', { id: command.id, input: { tasks: command.tasks, webhook: command.webhook } });
  } else {
    // The command number is the idempotency key: a command re-sent after a crash adds nothing twice.
    await runtime.send(command.id, { type: 'task.add', task: command.task }, `cmd-${command.n}`);
  }
  process.stdout.write(`${JSON.stringify({ ack: command.n })}\n`);
}

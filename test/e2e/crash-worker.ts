/**
 * The process the crash tests kill. It opens the store (recovering every active agent: on SQLite
 * all of them, on a shared Postgres schema those no live process holds), then executes commands
 * read from stdin in order, one JSON object per line, printing `{"ack":n}` once a command is
 * committed. Nothing else: all checks happen in the parent, which outlives every kill.
 *
 *   crash-worker.ts --store sqlite:<file> --llm <url> [--synchronous full|normal] [--commit-delay-ms N]
 *   crash-worker.ts --store postgres:<url>#<schema> --llm <url> --lease-ms N [--commit-delay-ms N] [--log-level L]
 *
 * Other lines it prints: `{"ready":true}` once recovered; `{"missing":n}` for a `task.add` to an
 * agent that does not exist (yet: another process may not have committed its spawn), which the
 * parent sends again later, as a client that got a 404 would; on Postgres, `{"owns":[ids]}` when it
 * starts running agents it spawned or claimed, and `{"checkpoints":[[id,seq],...]}` after each
 * commit, for what the database accepted (the parent checks who ran and wrote which agent); and the
 * runtime's own log lines (pino JSON, with `msg`) at `--log-level` (default silent).
 */
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { NotFoundError } from '../../src/core/errors.js';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import { createLogger } from '../../src/core/logger.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import type { HttpToolInput } from '../../src/agents/reference/types.js';
import { createRuntime } from '../../src/runtime/runtime.js';

export type WorkerCommand =
  | { n: number; op: 'spawn'; id: string; tasks: string[]; webhook: string; tools: HttpToolInput[] }
  | { n: number; op: 'add'; id: string; task: string };

/** What a worker prints on stdout, one JSON object a line. */
export type WorkerMessage =
  | { ready: true }
  | { ack: number }
  | { missing: number }
  | { owns: string[] }
  | { checkpoints: [agentId: string, seq: number][] }
  | { msg: string; level: number; name: string };

const { values: args } = parseArgs({
  options: {
    store: { type: 'string' },
    llm: { type: 'string' },
    synchronous: { type: 'string', default: 'full' },
    'commit-delay-ms': { type: 'string', default: '0' },
    'lease-ms': { type: 'string' },
    'log-level': { type: 'string', default: 'silent' },
  },
});
if (!args.store || !args.llm) throw new Error('crash-worker: --store and --llm are required');

const print = (message: WorkerMessage) => process.stdout.write(`${JSON.stringify(message)}\n`);

async function openStore(spec: string): Promise<Store> {
  if (spec.startsWith('sqlite:')) {
    return openSqliteStore(spec.slice('sqlite:'.length), { synchronous: args.synchronous as 'normal' | 'full' });
  }
  const match = /^postgres:(.+)#([^#]+)$/.exec(spec);
  if (!match) throw new Error(`crash-worker: unknown store ${spec}`);
  const store = await openPostgresStore(match[1]!, { schema: match[2]!, leaseMs: Number(args['lease-ms']) });
  // Which agents this process starts running, and when: spawned here or claimed (recovery, takeover, wake).
  const { leases } = store;
  const claimOrphans = leases.claimOrphans.bind(leases);
  leases.claimOrphans = async (options) => {
    const claimed = await claimOrphans(options);
    if (claimed.length > 0) print({ owns: claimed.map((a) => a.agent.id) });
    return claimed;
  };
  const claim = leases.claim.bind(leases);
  leases.claim = async (agentId) => {
    const claimed = await claim(agentId);
    if (claimed !== undefined && claimed !== 'elsewhere') print({ owns: [agentId] });
    return claimed;
  };
  // Which checkpoints it committed (the database accepted them: not fenced), for the parent to check
  // that an agent's writer changes only when the previous one has died.
  const commit = store.commit.bind(store);
  store.commit = async (writes) => {
    const results = await commit(writes);
    const checkpoints = writes.flatMap((w, i) => {
      const result = results[i];
      return w.kind === 'checkpoint' && !(result && 'refused' in result) ? [[w.agentId, w.seq] as [string, number]] : [];
    });
    if (checkpoints.length > 0) print({ checkpoints });
    return results;
  };
  const createAgent = store.createAgent.bind(store);
  store.createAgent = async (agent) => {
    const result = await createAgent(agent);
    if (result.created) print({ owns: [agent.id] });
    return result;
  };
  return store;
}

const store = await openStore(args.store);
// A slow disk (or a remote database): every commit takes this long, which widens the window in
// which an effect could overtake the checkpoint it depends on, were the runtime to allow it.
const delayMs = Number(args['commit-delay-ms']);
if (delayMs > 0) {
  const commit = store.commit.bind(store);
  store.commit = async (writes) => {
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    return commit(writes);
  };
}
const logLevel = args['log-level'];
// Built by hand, not with test/helpers/runtime.ts: this is a plain Node process, outside vitest (the fixture needs its hooks).
const runtime = await createRuntime({
  store,
  ...(logLevel === 'silent' ? {} : { logger: createLogger({ level: logLevel, name: `crash-worker ${process.pid}` }) }),
  machines: [
    agentDefinition({
      llm: createOpenAiClient({ baseURL: args.llm, apiKey: 'test' }),
      defaults: { maxAttempts: 12, baseDelayMs: 5, maxDelayMs: 50, timeoutMs: 2000 },
    }),
  ],
});
print({ ready: true });

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const command = JSON.parse(line) as WorkerCommand;
  if (command.op === 'spawn') {
    await runtime.spawn('agent', { id: command.id, input: { tasks: command.tasks, webhook: command.webhook, tools: command.tools } });
  } else {
    try {
      // The command number is the idempotency key: a command re-sent after a crash adds nothing twice.
      await runtime.send(command.id, { type: 'task.add', task: command.task }, `cmd-${command.n}`);
    } catch (err) {
      if (!(err instanceof NotFoundError && err.kind === 'agent')) throw err;
      print({ missing: command.n });
      continue;
    }
  }
  print({ ack: command.n });
}

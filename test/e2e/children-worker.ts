/**
 * The process the child-agent crash test kills: a runtime with the example `supervisor` and the
 * reference `agent` (a simulated LLM that takes `--llm-ms` per call) on a shared Postgres schema,
 * spawning what stdin asks (one JSON object per line), printing `{"ready":true,"processId"}` once
 * it has taken its lease and adopted what no live process runs, and `{"ack":n}` per spawn.
 *
 *   children-worker.ts --postgres <url>#<schema> --lease-ms N --llm-ms N [--passivate-ms N]
 */
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { supervisorDefinition } from '../docs/examples/supervisor-machine.js';

export interface SpawnCommand {
  n: number;
  machine: string;
  id: string;
  input: unknown;
}

const { values: args } = parseArgs({
  options: { postgres: { type: 'string' }, 'lease-ms': { type: 'string', default: '1000' }, 'llm-ms': { type: 'string', default: '0' }, 'passivate-ms': { type: 'string' } },
});
const match = /^(.+)#([^#]+)$/.exec(args.postgres ?? '');
if (!match) throw new Error('children-worker: --postgres <url>#<schema> is required');
const store = await openPostgresStore(match[1]!, { schema: match[2]!, leaseMs: Number(args['lease-ms']) });
const runtime = await createRuntime({
  store,
  machines: [supervisorDefinition, agentDefinition({ llm: createSimulatedLlm({ latencyMs: Number(args['llm-ms']) }) })],
  // With passivation on, this process leaves resting agents (a parent waiting for its children) to others.
  ...(args['passivate-ms'] ? { passivateAfterMs: Number(args['passivate-ms']) } : {}),
});
const print = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);
print({ ready: true, processId: store.leases!.processId });

for await (const line of readline.createInterface({ input: process.stdin })) {
  const command = JSON.parse(line) as SpawnCommand;
  await runtime.spawn(command.machine, { id: command.id, input: command.input });
  print({ ack: command.n });
}

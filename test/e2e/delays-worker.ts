/**
 * The process the delay and message crash tests kill: a runtime with their machines (`sleeper`,
 * `pinger`, `counter`) on a SQLite file (recovering every active agent) or a shared Postgres schema
 * (taking over the agents of dead processes), executing commands from stdin, one JSON object per
 * line, and printing `{"ack":n}` once each is committed, `{"ready":true}` once recovered.
 *
 *   delays-worker.ts --db <file>
 *   delays-worker.ts --postgres <url>#<schema> --lease-ms N
 */
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import type { InboxEvent } from '../../src/store/store.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { counter, pinger, sleeper } from './delays-machine.js';

export type WorkerCommand =
  | { n: number; op: 'spawn'; machine: string; id: string; input: unknown }
  | { n: number; op: 'send'; id: string; event: InboxEvent; key: string };

const { values: args } = parseArgs({ options: { db: { type: 'string' }, postgres: { type: 'string' }, 'lease-ms': { type: 'string', default: '1000' } } });
async function openStore() {
  if (args.db) return openSqliteStore(args.db);
  const match = /^(.+)#([^#]+)$/.exec(args.postgres ?? '');
  if (!match) throw new Error('delays-worker: --db <file> or --postgres <url>#<schema> is required');
  return openPostgresStore(match[1]!, { schema: match[2]!, leaseMs: Number(args['lease-ms']) });
}
const runtime = await createRuntime({ store: await openStore(), machines: [sleeper, pinger, counter] });
const print = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);
print({ ready: true });

for await (const line of readline.createInterface({ input: process.stdin })) {
  const command = JSON.parse(line) as WorkerCommand;
  if (command.op === 'spawn') await runtime.spawn(command.machine, { id: command.id, input: command.input });
  else await runtime.send(command.id, command.event, command.key);
  print({ ack: command.n });
}

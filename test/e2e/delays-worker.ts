/**
 * The process the delay crash test kills: a runtime with the `sleeper` machine on a SQLite file
 * (recovering every active agent), executing commands from stdin, one JSON object per line, and
 * printing `{"ack":n}` once each is committed, `{"ready":true}` once recovered.
 *
 *   delays-worker.ts --db <file>
 */
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { createRuntime } from '../../src/runtime/runtime.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { sleeper } from './delays-machine.js';

export type DelaysCommand = { n: number; op: 'spawn'; id: string; ms: number } | { n: number; op: 'cancel'; id: string };

const { values: args } = parseArgs({ options: { db: { type: 'string' } } });
if (!args.db) throw new Error('delays-worker: --db is required');
const runtime = await createRuntime({ store: await openSqliteStore(args.db), machines: [sleeper] });
const print = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);
print({ ready: true });

for await (const line of readline.createInterface({ input: process.stdin })) {
  const command = JSON.parse(line) as DelaysCommand;
  if (command.op === 'spawn') await runtime.spawn('sleeper', { id: command.id, input: { ms: command.ms } });
  else await runtime.send(command.id, { type: 'cancel' });
  print({ ack: command.n });
}

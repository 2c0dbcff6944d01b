/**
 * Another process for test/store/sqlite-lock.test.ts: what it does with a SQLite file, one JSON line
 * on stdout for the parent.
 *
 *   sqlite-lock-worker.ts hold <file>              opens the store (the writer lock), spawns `held-1`,
 *                                                  prints {"holding":pid}, then waits to be killed
 *   sqlite-lock-worker.ts open <file> [read-only]  opens it, prints {"agents":[ids],"write":<error name>}
 *                                                  or {"error":{name,message,holderPid}}, closes, exits 0
 */
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const [command, file, mode] = process.argv.slice(2) as [string, string, string | undefined];
const say = (line: unknown) => process.stdout.write(`${JSON.stringify(line)}\n`);

if (command === 'hold') {
  const store = await openSqliteStore(file, { synchronous: 'normal' });
  await store.createAgent({ id: 'held-1', machine: 'agent', machineVersion: '1', input: {}, createdAt: new Date().toISOString() });
  say({ holding: process.pid });
  setInterval(() => undefined, 60_000); // until SIGKILL
} else {
  try {
    const store = await openSqliteStore(file, { readOnly: mode === 'read-only' });
    const agents = (await store.listAgents({ limit: 100 })).items.map((a) => a.id);
    const write = await store.createAgent({ id: 'w', machine: 'agent', machineVersion: '1', input: {}, createdAt: '' }).then(
      () => 'none',
      (err: Error) => err.name,
    );
    await store.close();
    say({ agents, write });
  } catch (err) {
    const { name, message, holderPid } = err as Error & { holderPid?: number };
    say({ error: { name, message, holderPid } });
  }
}

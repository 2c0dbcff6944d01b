// The typed-handle example of docs/machines.md (test/docs/examples/typed-agents.ts) on the real
// runtime and a real SQLite file, run twice on the same file as two starts of a program.
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { tempDbFile } from '../helpers/temp.js';
import { countTo } from './examples/typed-agents.js';

describe('the typed-handle example of docs/machines.md', () => {
  it('counts up to n, and on a second start carries on from the count it left', async () => {
    const file = tempDbFile();
    expect(await countTo(file, 'c1', 3)).toBe(3);
    expect(await countTo(file, 'c1', 5)).toBe(5);

    const store = await openSqliteStore(file);
    try {
      // One agent, one event per increment: the second start spawned nothing and sent only the two missing.
      expect(await store.getAgent('c1')).toMatchObject({ machine: 'counter', status: 'active', eventSeq: 5 });
      expect((await store.listAgents({ limit: 10 })).items).toHaveLength(1);
    } finally {
      await store.close();
    }
  });
});

// Runs the README's library example (test/docs/examples/library.ts) as a user would run it: on a
// SQLite file of its own with the simulated LLM, twice on the same file, as two starts of a program.
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { tempDir } from '../helpers/temp.js';

/** Imports the example afresh (a new module instance, as a new process would) and returns what it printed. */
async function runExample(dbFile: string): Promise<unknown[][]> {
  vi.stubEnv('DURABLE_AGENTS_DB', dbFile);
  vi.stubEnv('OPENAI_API_KEY', '');
  const printed: unknown[][] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void printed.push(args));
  try {
    vi.resetModules();
    await import('./examples/library.js');
  } finally {
    log.mockRestore();
  }
  return printed;
}

const answerTo = (task: string) => `Simulated answer (gpt-4o-mini) to: ${task}`;

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('the library example', () => {
  it('runs both tasks through the LLM and the side effect, and leaves them committed in the file', async () => {
    const dbFile = path.join(tempDir('da-docs-'), 'agents.db');
    const printed = await runExample(dbFile);

    expect(printed[0]).toEqual(['progress', 2]);
    const actions = printed.slice(1);
    expect(actions.map(([action]) => action)).toEqual(['callLlm', 'runSideEffect', 'callLlm', 'runSideEffect']);
    expect(actions.filter(([action]) => action === 'callLlm').map(([, result]) => result)).toEqual([
      expect.objectContaining({ ok: true, output: expect.objectContaining({ content: answerTo('Summarize the report') }) }),
      expect.objectContaining({ ok: true, output: expect.objectContaining({ content: answerTo('Extract the entities') }) }),
    ]);

    const store = await openSqliteStore(dbFile);
    try {
      expect(await store.getAgent('a1')).toMatchObject({ machine: 'agent', status: 'active', state: 'idle', progress: 2 });
    } finally {
      await store.close();
    }
  });

  it('run again on the same file, keeps the agent (spawn is idempotent) and asks the LLM only for the new task', async () => {
    const dbFile = path.join(tempDir('da-docs-'), 'agents.db');
    await runExample(dbFile);
    const printed = await runExample(dbFile);

    expect(printed[0]).toEqual(['progress', 3]);
    const llmCalls = printed.slice(1).filter(([action]) => action === 'callLlm');
    expect(llmCalls.map(([, result]) => (result as { output: { content: string } }).output.content)).toEqual([
      answerTo('Summarize the report'),
      answerTo('Extract the entities'),
      answerTo('Extract the entities'),
    ]);
  });
});

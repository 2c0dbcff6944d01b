// Runs docs/tools.md's library example (test/docs/examples/tools.ts) on a SQLite file of its own.
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../helpers/temp.js';

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('the tools example', () => {
  it('runs the code tool once under its key and answers with its result', async () => {
    vi.stubEnv('DURABLE_AGENTS_DB', path.join(tempDir('da-docs-tools-'), 'agents.db'));
    const printed = new Map<string, unknown>();
    const log = vi.spyOn(console, 'log').mockImplementation((label: string, value: unknown) => void printed.set(label, value));
    try {
      vi.resetModules();
      await import('./examples/tools.js');
    } finally {
      log.mockRestore();
    }
    expect(printed.get('results')).toEqual([
      {
        seq: 1,
        task: 'Please lookup Ana and greet her',
        response: expect.stringContaining('"customer":"Ana Lima, #4711","key":"support-1:1:call_0_0"'),
        usage: expect.objectContaining({ llmCalls: 2 }),
        turns: 2,
      },
    ]);
    expect(printed.get('tools')).toEqual({
      ok: true,
      ms: expect.any(Number),
      output: [{ callId: 'call_0_0', name: 'lookup', ok: true, content: '{"customer":"Ana Lima, #4711","key":"support-1:1:call_0_0"}' }],
    });
  });
});

// Runs docs/tools.md's MCP example (test/docs/examples/mcp-tools.ts): server-filesystem started
// through npx (from node_modules), on a folder and a SQLite file of its own.
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../helpers/temp.js';

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('the MCP tools example', () => {
  it('offers the server\'s tools as files__<tool> and answers with the call\'s result', async () => {
    const notes = tempDir('da-docs-mcp-notes-');
    vi.stubEnv('DURABLE_AGENTS_DB', path.join(tempDir('da-docs-mcp-'), 'agents.db'));
    vi.stubEnv('NOTES_DIR', notes);
    const printed = new Map<string, unknown>();
    const log = vi.spyOn(console, 'log').mockImplementation((label: string, value: unknown) => void printed.set(label, value));
    try {
      vi.resetModules();
      await import('./examples/mcp-tools.js');
    } finally {
      log.mockRestore();
    }
    const content = `Allowed directories:\n${notes}`;
    expect(printed.get('tools')).toEqual({
      ok: true,
      ms: expect.any(Number),
      output: [{ callId: 'call_0_0', name: 'files__list_allowed_directories', ok: true, content }],
    });
    expect(printed.get('results')).toEqual([expect.objectContaining({ seq: 1, response: expect.stringContaining(`tool results: ${content}`), turns: 2 })]);
  }, 30_000);
});

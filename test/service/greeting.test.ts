import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILTIN_TOOLS } from '../../src/agents/reference/builtin-tools.js';
import { createServer } from '../../src/http/app.js';
import { agentDefinition, createRuntime, createSimulatedLlm } from '../../src/index.js';
import { greetingLines, type Greeting } from '../../src/service/greeting.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { shellWords } from '../docs/curl.js';

const SIMULATED: Greeting = {
  url: 'http://127.0.0.1:3000',
  llm: { kind: 'simulated', description: 'simulated LLM (fault rate 0)', model: 'gpt-4o-mini' },
  store: { kind: 'sqlite', location: './data/agents.db', synchronous: 'full' },
  auth: false,
};

const REAL: Greeting = {
  url: 'http://0.0.0.0:8080',
  llm: { kind: 'openai', description: 'OpenAI-compatible API at https://api.openai.com/v1', model: 'gpt-4o' },
  store: { kind: 'postgres', location: 'postgres://app:***@db:5432/agents#tenant1', leaseMs: 10_000 },
  auth: true,
};

/** The line that starts with `label` (after the indent), its value. */
function row(lines: string[], label: string): string {
  const line = lines.find((l) => l.trimStart().startsWith(`${label} `));
  if (!line) throw new Error(`no ${label} line in:\n${lines.join('\n')}`);
  return line.trimStart().slice(label.length).trim();
}

describe('greetingLines', () => {
  it('says first where the dashboard and the API are', () => {
    const lines = greetingLines(SIMULATED);
    const labelled = lines.map((l) => l.trim().split(/\s+/)[0]).filter((w) => ['Dashboard', 'API', 'LLM', 'Data', 'Auth', 'Try'].includes(w!));
    expect(labelled).toEqual(['Dashboard', 'API', 'LLM', 'Data', 'Auth', 'Try']);
    expect(row(lines, 'Dashboard')).toBe('http://127.0.0.1:3000/');
    expect(row(lines, 'API')).toBe('http://127.0.0.1:3000  (OpenAPI document: http://127.0.0.1:3000/openapi.json)');
  });

  it('shows last a first curl that spawns an agent with one task', async () => {
    const lines = greetingLines(SIMULATED);
    const start = lines.findIndex((l) => l.trimStart().startsWith('Try '));
    expect(row(lines, 'Try')).toBe(`curl -s http://127.0.0.1:3000/agents -H 'content-type: application/json' \\`);
    // As a shell reads it: the two lines are one command.
    const words = shellWords(`${row(lines, 'Try').slice(0, -1)} ${lines[start + 1]!.trim()}`);
    expect(words.slice(0, 6)).toEqual(['curl', '-s', 'http://127.0.0.1:3000/agents', '-H', 'content-type: application/json', '-d']);
    expect(words).toHaveLength(7);
    // The app that `serve` runs with the simulated LLM spawns it (at every start: no id is given).
    const runtime = await createRuntime({ store: new MemoryStore(), machines: [agentDefinition({ llm: createSimulatedLlm(), tools: BUILTIN_TOOLS })] });
    try {
      const app = createServer({ runtime });
      for (let i = 0; i < 2; i++) {
        const res = await app.request('/agents', { method: 'POST', headers: { 'content-type': 'application/json' }, body: words[6]! });
        expect(res.status).toBe(201);
        expect(await res.json()).toMatchObject({ machine: 'agent', status: 'active' });
      }
    } finally {
      await runtime.close();
    }
  });

  it('puts a placeholder for the token in the curl when one is required', () => {
    const lines = greetingLines(REAL);
    expect(row(lines, 'Try')).toBe(`curl -s http://0.0.0.0:8080/agents -H 'content-type: application/json' -H 'authorization: Bearer <token>' \\`);
  });

  it('says loudly that the LLM is simulated, and how to call a real one', () => {
    const lines = greetingLines(SIMULATED);
    expect(row(lines, 'LLM')).toBe('*** SIMULATED: answers are made up locally, no model is called ***');
    const next = lines[lines.findIndex((l) => l.includes('*** SIMULATED')) + 1]!;
    expect(next).toMatch(/^\s+Set OPENAI_API_KEY or OPENAI_BASE_URL .* to call a real one\.$/);
  });

  it('names the model and the API of a real LLM, without shouting', () => {
    const llm = row(greetingLines(REAL), 'LLM');
    expect(llm).toBe('gpt-4o through the OpenAI-compatible API at https://api.openai.com/v1');
  });

  it('says where the data lives: the SQLite file as an absolute path, or the Postgres database', () => {
    expect(row(greetingLines(SIMULATED), 'Data')).toBe(`SQLite file ${path.resolve('./data/agents.db')} (fsynced at every commit)`);
    const normal = greetingLines({ ...SIMULATED, store: { ...SIMULATED.store, synchronous: 'normal' } });
    expect(row(normal, 'Data')).toContain('not power loss');
    expect(row(greetingLines(REAL), 'Data')).toMatch(/^Postgres postgres:\/\/app:\*\*\*@db:5432\/agents#tenant1 \(lease 10000 ms/);
  });

  it('says whether a token is needed', () => {
    expect(row(greetingLines(REAL), 'Auth')).toContain('bearer token is required');
    expect(row(greetingLines(SIMULATED), 'Auth')).toMatch(/^none/);
  });

  it('has no colour codes unless asked', () => {
    expect(greetingLines(SIMULATED).join('\n')).not.toMatch(/\u001b\[/);
    expect(greetingLines(SIMULATED, { colors: true }).join('\n')).toMatch(/\u001b\[/);
  });
});

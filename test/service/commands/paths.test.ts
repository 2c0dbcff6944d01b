import { describe, expect, it } from 'vitest';
import { runPathsCommand } from '../../../src/service/commands/paths.js';
import { agentPathTestOptions, pathTests } from '../../../src/testing/index.js';

async function run(...argv: string[]) {
  const lines: string[] = [];
  const code = await runPathsCommand(argv, (line) => lines.push(line));
  return { code, text: lines.join('\n'), lines };
}

describe('durable-agents paths', () => {
  it('prints the generated paths of `agent` with the state after each event, and the coverage', async () => {
    const { code, lines } = await run('agent');
    expect(code).toBe(0);
    const count = pathTests(agentPathTestOptions()).paths.length;
    expect(lines[0]).toMatch(new RegExp(`^agent \\(version 3\\): ${count} paths \\(.*\\), \\d+ crash cases$`));
    // The 3 left are the budget's (an agent with a budget: test/agents/reference/budget.paths.test.ts).
    expect(lines[1]).toBe('coverage: 15/15 states, 34/37 transitions');
    expect(lines.filter((l) => /^#\d+ /.test(l))).toHaveLength(count);
    // A path block: its name, then one line per step: number, event, state.
    const start = lines.indexOf('#001 finish ⇒ done (done)');
    expect(lines.slice(start, start + 3)).toEqual(['#001 finish ⇒ done (done)', '   0  (spawn)  idle', '   1  finish   done (done)']);
  });

  it('prints JSON with every step of every path, and honours --depth', async () => {
    const { code, text } = await run('agent', '--format', 'json', '--depth=0');
    expect(code).toBe(0);
    const doc = JSON.parse(text) as {
      machine: string;
      paths: { name: string; origin: string; steps: { event: { type: string }; state: unknown; status: string }[] }[];
      coverage: { transitions: { missing: string[] } };
      events: { type: string; error?: { message?: string } }[];
    };
    expect(doc.machine).toBe('agent');
    expect(doc.paths).toHaveLength(pathTests({ ...agentPathTestOptions(), simplePathDepth: 0 }).paths.length);
    expect(doc.paths.some((p) => p.origin === 'simple')).toBe(false);
    expect(doc.paths[0]!.steps[0]).toEqual({ event: { type: 'xstate.init' }, state: 'idle', status: 'active' });
    // The budget's transitions need an agent with a budget (test/agents/reference/budget.paths.test.ts).
    expect(doc.coverage.transitions.missing).toEqual([
      'agent: budget.raise [hasBudget] → (no target)',
      'agent.callingLLM: always [overBudget] → agent.failed',
      'agent.failed: budget.raise [failedOnBudget] → agent.callingLLM',
    ]);
    // Error samples keep their message in JSON (a bare Error would print as {}).
    expect(doc.events.find((e) => e.type === 'xstate.error.actor.llm')?.error?.message).toBe('The model is overloaded (HTTP 503).');
  });

  it('exits 2 with the usage for an unknown machine or a bad option, 0 for --help', async () => {
    expect(await run('nope')).toMatchObject({ code: 2, text: expect.stringMatching(/^Unknown machine "nope"\. Known: agent\./) });
    expect(await run('agent', '--format', 'xml')).toMatchObject({ code: 2, text: expect.stringMatching(/--format must be text or json/) });
    expect(await run('agent', '--depth', '-1')).toMatchObject({ code: 2 });
    expect(await run()).toMatchObject({ code: 2, text: expect.stringMatching(/^Which machine\?/) });
    expect(await run('--help')).toMatchObject({ code: 0, text: expect.stringMatching(/^Usage: durable-agents paths <machine>/) });
  });
});

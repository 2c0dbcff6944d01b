// The tools `serve` offers with the simulated LLM: the simulated model calls them deterministically,
// so a task with arithmetic goes through the calculator, and a note waits for a person's approval.
import { describe, expect, it } from 'vitest';
import { BUILTIN_TOOLS, evaluate, publishedNotes } from '../../../src/agents/reference/builtin-tools.js';
import { agentDefinition } from '../../../src/agents/reference/definition.js';
import type { AgentContext } from '../../../src/agents/reference/types.js';
import { createSimulatedLlm } from '../../../src/llm/simulated-client.js';
import { runtimesClosedAfterEach, waitForView } from '../../helpers/runtime.js';

const startRuntime = runtimesClosedAfterEach();
const machines = () => [agentDefinition({ llm: createSimulatedLlm(), tools: BUILTIN_TOOLS })];

describe('the built-in tools with the simulated LLM', () => {
  it('evaluates + - * / and parentheses, and refuses anything else', () => {
    expect(evaluate('12 * (3 + 4)')).toBe(84);
    expect(evaluate('-2 + 10 / 4')).toBe(0.5);
    expect(() => evaluate('2 ** 3')).toThrow(/unexpected/);
    expect(() => evaluate('process.exit()')).toThrow(/unexpected/);
    expect(() => evaluate('(1 + 2')).toThrow(/not closed/);
  });

  it('answers a task with arithmetic through the calculator', async () => {
    const { runtime } = await startRuntime({ machines: machines() });
    await runtime.spawn('agent', { id: 'calc', input: { tasks: ['What is 12 * (3 + 4)?'] } });
    const view = await waitForView(runtime, 'calc', (v) => v.state === 'idle' && v.progress === 1);
    const [result] = (view.context as AgentContext).results;
    expect(result).toMatchObject({ turns: 2, response: expect.stringContaining('{"expression":"12 * (3 + 4)","value":84}') });
  });

  it('waits for approval before publishing a note, then publishes it once', async () => {
    const { runtime } = await startRuntime({ machines: machines() });
    await runtime.spawn('agent', { id: 'note', input: { tasks: ['Please publish_note: the release is out'] } });
    const waiting = await waitForView(runtime, 'note', (v) => (v.context as AgentContext).pendingApprovals.length === 1);
    const [pending] = (waiting.context as AgentContext).pendingApprovals;
    expect(pending).toMatchObject({ name: 'publish_note', arguments: { text: 'Please publish_note: the release is out' } });
    expect(publishedNotes.filter((n) => n.key.startsWith('note:'))).toEqual([]);
    await runtime.send('note', { type: 'tool.approve', callId: pending!.callId });
    await waitForView(runtime, 'note', (v) => v.state === 'idle' && v.progress === 1);
    expect(publishedNotes.filter((n) => n.key.startsWith('note:'))).toEqual([{ key: `note:1:${pending!.callId}`, text: 'Please publish_note: the release is out' }]);
  });
});

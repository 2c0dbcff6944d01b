// The tools `serve` offers with the simulated LLM: the simulated model calls them deterministically,
// so a task with arithmetic goes through the calculator, and a note waits for a person's approval.
import { describe, expect, it } from 'vitest';
import { BUILTIN_TOOLS, evaluate, publishedNotes } from '../../../src/agents/reference/builtin-tools.js';
import { agentDefinition } from '../../../src/agents/reference/definition.js';
import type { AgentContext } from '../../../src/agents/reference/types.js';
import { answerToPass, createSimulatedLlm } from '../../../src/llm/simulated-client.js';
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

  it("hands a named tool the simulated model's answer: the arithmetic's result, else what follows the tool's name", () => {
    expect(answerToPass('What is 12 * (3 + 4)? Then publish_note the result.', 'publish_note')).toBe('12 * (3 + 4) = 84');
    expect(answerToPass('Please publish_note: the release is out', 'publish_note')).toBe('the release is out');
    expect(answerToPass('publish_note', 'publish_note')).toBe('publish_note');
    expect(answerToPass('Divide 1 / 0 and publish_note it', 'publish_note')).toBe('it'); // no finite result: the words
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
    // The note is what the task asks to publish, not the request itself.
    expect(pending).toMatchObject({ name: 'publish_note', arguments: { text: 'the release is out' } });
    expect(publishedNotes.filter((n) => n.key.startsWith('note:'))).toEqual([]);
    await runtime.send('note', { type: 'tool.approve', callId: pending!.callId });
    await waitForView(runtime, 'note', (v) => v.state === 'idle' && v.progress === 1);
    expect(publishedNotes.filter((n) => n.key.startsWith('note:'))).toEqual([{ key: `note:1:${pending!.callId}`, text: 'the release is out' }]);
  });

  it("publishes the calculator's answer, not the question, when a task asks for both (the README's example)", async () => {
    const { runtime } = await startRuntime({ machines: machines() });
    await runtime.spawn('agent', { id: 'both', input: { tasks: ['What is 12 * (3 + 4)? Then publish_note the result.'] } });
    const waiting = await waitForView(runtime, 'both', (v) => (v.context as AgentContext).pendingApprovals.length === 1);
    const [pending] = (waiting.context as AgentContext).pendingApprovals;
    expect(pending).toMatchObject({ callId: 'call_0_1', name: 'publish_note', arguments: { text: '12 * (3 + 4) = 84' } });
    await runtime.send('both', { type: 'tool.approve', callId: pending!.callId });
    const view = await waitForView(runtime, 'both', (v) => v.state === 'idle' && v.progress === 1);
    expect(publishedNotes.filter((n) => n.key.startsWith('both:'))).toEqual([{ key: `both:1:call_0_1`, text: '12 * (3 + 4) = 84' }]);
    const [result] = (view.context as AgentContext).results;
    expect(result).toMatchObject({ turns: 2, response: expect.stringContaining('{"expression":"12 * (3 + 4)","value":84}') });
  });
});

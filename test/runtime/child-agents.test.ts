// Child agents in one process (`spawnAgent`, and the reference agent's agent tools): the child is
// created with the parent's checkpoint, runs as an agent of its own, and its report is in the
// parent's inbox once, under the child's key; stopping the parent stops its children. The SIGKILL
// and two-process versions: test/e2e/children-crash.test.ts.
import { describe, expect, it, vi } from 'vitest';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import type { AgentContext } from '../../src/agents/reference/types.js';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import { supervisorDefinition, workerId, type SupervisorOutput } from '../docs/examples/supervisor-machine.js';
import { hangUntilAborted, recordingLlm, runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';
import { lastUserText, NO_USAGE } from '../../src/llm/client.js';
import type { Store, Write } from '../../src/store/store.js';
import { startFakeOpenAI } from '../support/fake-openai.js';
import { crashableStore } from '../../src/testing/index.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { tempDbFile } from '../helpers/temp.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { freshSchema, postgresUrl } from '../helpers/postgres.js';
import { assign, setup } from 'xstate';
import { spawnAgent, type ChildEvent, type MachineDefinition } from '../../src/index.js';

/** A parent that spawns a child of the machine an event names, and keeps every report it gets. */
const collector: MachineDefinition = {
  name: 'collector',
  machine: setup({ types: { context: {} as { reports: ChildEvent[] }, events: {} as { type: 'start'; machine: string; id: string; input?: unknown } | ChildEvent } }).createMachine({
    id: 'collector',
    context: { reports: [] },
    on: {
      start: { actions: spawnAgent(({ event }) => event.machine, { id: ({ event }) => event.id, input: ({ event }: { event: { input?: unknown } }) => event.input ?? { n: 2 } }) },
      'agent.done': { actions: assign({ reports: ({ context, event }) => [...context.reports, event] }) },
      'agent.failed': { actions: assign({ reports: ({ context, event }) => [...context.reports, event] }) },
    },
  }),
};
/** A child that finishes at once with an output made of its input. */
const doubler: MachineDefinition = {
  name: 'doubler',
  machine: setup({ types: { input: {} as { n: number } } }).createMachine({
    id: 'doubler',
    initial: 'working',
    context: ({ input }) => ({ n: input.n }),
    states: { working: { always: 'finished' }, finished: { type: 'final' } },
    output: ({ context }) => ({ doubled: (context as { n: number }).n * 2 }),
  }),
};
/** A child whose statechart throws on its first event. */
const crasher: MachineDefinition = {
  name: 'crasher',
  machine: setup({}).createMachine({
    id: 'crasher',
    initial: 'waiting',
    states: {
      waiting: {
        entry: () => {
          throw new Error('The chart broke.');
        },
      },
    },
  }),
};
const reportsOf = (view: { context: unknown }) => (view.context as { reports: ChildEvent[] }).reports;

const start = runtimesClosedAfterEach();
const simulatedAgents = (latencyMs = 0) => agentDefinition({ llm: createSimulatedLlm({ latencyMs }) });
const outputOf = async (t: Awaited<ReturnType<typeof start>>, id: string) => {
  const checkpoints = await t.store.listCheckpoints(id);
  const last = await t.store.getCheckpoint(id, checkpoints.at(-1)!.seq);
  return (JSON.parse(last!.snapshot) as { output: SupervisorOutput }).output;
};

describe('child agents', () => {
  it('spawns three children with the checkpoint that enters `waiting`, and answers from their reports', async () => {
    const t = await start({ machines: [supervisorDefinition, simulatedAgents()] });
    await t.runtime.spawn('supervisor', { id: 's1', input: { question: 'Is tea better than coffee?' } });
    const done = await waitForView(t.runtime, 's1', (v) => v.status === 'done');
    expect(done.children).toEqual([workerId('s1', 0), workerId('s1', 1), workerId('s1', 2)]);
    // The first checkpoint after the initial one created the children: their rows point at it.
    for (const [i, id] of done.children!.entries()) {
      const child = await t.runtime.view(id);
      expect(child.parent).toBe('s1');
      expect(child.machine).toBe('agent');
      expect((child.context as AgentContext).system).toContain(['a skeptic', 'an optimist', 'a historian'][i]!);
      expect((child.context as AgentContext).results.map((r) => r.task)).toEqual(['Is tea better than coffee?']);
    }
    // Each child's answer is in the parent's inbox once, under the child's key.
    const inbox = await t.store.eventsAfter('s1', 0);
    expect(inbox.map((e) => [e.event.type, e.event.agentId, e.idempotencyKey]).sort()).toEqual(
      [0, 1, 2].map((i) => ['agent.response', workerId('s1', i), `${workerId('s1', i)}:1:response`]),
    );
    const output = await outputOf(t, 's1');
    expect(output.answered).toBe(3);
    for (const e of inbox) expect(output.answer).toContain(String(e.event.response));
  });

  it('answers from what came back when the deadline passes first', async () => {
    // Children that take longer than the deadline: the supervisor answers without them.
    const t = await start({ machines: [supervisorDefinition, simulatedAgents(2_000)] });
    await t.runtime.spawn('supervisor', { id: 's2', input: { question: 'Why is the sky blue?', deadlineMs: 150 } });
    await waitForView(t.runtime, 's2', (v) => v.status === 'done');
    expect(await outputOf(t, 's2')).toEqual({ answer: 'No answer came back in time.', answered: 0 });
  });

  it('stops its children (and theirs) when it is stopped', async () => {
    const t = await start({ machines: [supervisorDefinition, simulatedAgents(60_000)] });
    await t.runtime.spawn('supervisor', { id: 's3', input: { question: 'Slow?' } });
    await waitForView(t.runtime, 's3', (v) => (v.children?.length ?? 0) === 3);
    await t.runtime.stop('s3');
    expect((await t.runtime.view('s3')).status).toBe('stopped');
    for (let i = 0; i < 3; i++) expect((await t.runtime.view(workerId('s3', i))).status).toBe('stopped');
    expect(t.runtime.liveAgents).toBe(0);
  });

  it('stops the whole tree below an agent: children, and theirs', async () => {
    const t = await start({ machines: [collector, supervisorDefinition, simulatedAgents(60_000)] });
    await t.runtime.spawn('collector', { id: 'top' });
    await t.runtime.send('top', { type: 'start', machine: 'collector', id: 'top:mid' });
    await waitForView(t.runtime, 'top', (v) => (v.children?.length ?? 0) === 1);
    await t.runtime.send('top:mid', { type: 'start', machine: 'supervisor', id: 'top:mid:s', input: { question: 'Deep?' } });
    await waitForView(t.runtime, 'top:mid:s', (v) => (v.children?.length ?? 0) === 3);
    await t.runtime.stop('top');
    const tree = ['top', 'top:mid', 'top:mid:s', ...[0, 1, 2].map((i) => workerId('top:mid:s', i))];
    for (const id of tree) expect((await t.runtime.view(id)).status, id).toBe('stopped');
    expect(t.runtime.liveAgents).toBe(0);
  });

  it('reports a child stopped on its own to its parent, which goes on without it', async () => {
    const t = await start({ machines: [supervisorDefinition, simulatedAgents(60_000)] });
    await t.runtime.spawn('supervisor', { id: 's4', input: { question: 'Slow?' } });
    await waitForView(t.runtime, 's4', (v) => (v.children?.length ?? 0) === 3);
    for (let i = 0; i < 3; i++) await t.runtime.stop(workerId('s4', i));
    await waitForView(t.runtime, 's4', (v) => v.status === 'done');
    const inbox = await t.store.eventsAfter('s4', 0);
    expect(inbox.map((e) => [e.event.type, (e.event.error as { code: string }).code])).toEqual([
      ['agent.failed', 'stopped'], ['agent.failed', 'stopped'], ['agent.failed', 'stopped'],
    ]);
    expect(await outputOf(t, 's4')).toEqual({ answer: 'No answer came back in time.', answered: 0 });
  });

  it('refuses a spawn of a machine not registered here, and tells the parent at once', async () => {
    const t = await start({ machines: [supervisorDefinition] });
    await t.runtime.spawn('supervisor', { id: 's5', input: { question: 'Anyone?' } });
    await waitForView(t.runtime, 's5', (v) => v.status === 'done');
    expect(await t.store.getAgent(workerId('s5', 0))).toBeUndefined();
    const inbox = await t.store.eventsAfter('s5', 0);
    expect(inbox.map((e) => (e.event.error as { code: string }).code)).toEqual(['spawn_refused', 'spawn_refused', 'spawn_refused']);
  });

  it('creates no child for a checkpoint that is not committed; the restored parent creates each once', async () => {
    const file = tempDbFile();
    const crashable = crashableStore(await openSqliteStore(file));
    const first = await start({ machines: [supervisorDefinition, simulatedAgents(60_000)], store: crashable.store });
    // The initial checkpoint (seq 1) is the one entering `waiting`: it carries the spawns.
    crashable.crashBeforeCheckpoint(1);
    await first.runtime.spawn('supervisor', { id: 's6', input: { question: 'Again?' } }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const reader = await openSqliteStore(file);
    expect((await reader.getAgent('s6'))?.lastSeq).toBe(0);
    expect(await reader.getAgent(workerId('s6', 0))).toBeUndefined();
    await reader.close();
    await first.runtime.close().catch(() => undefined);
    const second = await start({ machines: [supervisorDefinition, simulatedAgents()], file });
    await waitForView(second.runtime, 's6', (v) => v.status === 'done');
    const inbox = await second.store.eventsAfter('s6', 0);
    expect(inbox.map((e) => e.event.agentId).sort()).toEqual([0, 1, 2].map((i) => workerId('s6', i)));
  });
});

describe('what a child reports', () => {
  it('reports its final output as agent.done, and an error of its chart as agent.failed, each once', async () => {
    const t = await start({ machines: [collector, doubler, crasher] });
    await t.runtime.spawn('collector', { id: 'col' });
    await t.runtime.send('col', { type: 'start', machine: 'doubler', id: 'col:d' });
    await t.runtime.send('col', { type: 'start', machine: 'crasher', id: 'col:x' });
    // Spawning an existing id again changes nothing and reports nothing more.
    await t.runtime.send('col', { type: 'start', machine: 'doubler', id: 'col:d' });
    const view = await waitForView(t.runtime, 'col', (v) => reportsOf(v).length === 2);
    expect(reportsOf(view)).toEqual([
      { type: 'agent.done', agentId: 'col:d', output: { doubled: 4 } },
      { type: 'agent.failed', agentId: 'col:x', error: expect.objectContaining({ message: expect.stringContaining('The chart broke.') }) },
    ]);
    expect((await t.runtime.view('col:d')).status).toBe('done');
    expect((await t.runtime.view('col:x')).status).toBe('error');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reportsOf(await t.runtime.view('col'))).toHaveLength(2);
    expect((await t.store.eventsAfter('col', 0)).filter((e) => e.event.type.startsWith('agent.')).map((e) => e.idempotencyKey)).toEqual(['col:d:ended', 'col:x:ended']);
  });

  it('reports the same on Postgres, where the report travels in the outbox of the child\'s last checkpoint', async () => {
    const store = await openPostgresStore(postgresUrl, { schema: freshSchema(), leaseMs: 5_000 });
    const t = await start({ machines: [collector, doubler, crasher], store });
    await t.runtime.spawn('collector', { id: 'pg-col' });
    await t.runtime.send('pg-col', { type: 'start', machine: 'doubler', id: 'pg-col:d' });
    await t.runtime.send('pg-col', { type: 'start', machine: 'crasher', id: 'pg-col:x' });
    const view = await waitForView(t.runtime, 'pg-col', (v) => reportsOf(v).length === 2);
    expect(reportsOf(view).map((r) => [r.type, r.agentId])).toEqual([['agent.done', 'pg-col:d'], ['agent.failed', 'pg-col:x']]);
    expect(reportsOf(view)[0]).toMatchObject({ output: { doubled: 4 } });
  });

  it('wakes a passivated parent with its children\'s reports', async () => {
    const t = await start({ machines: [supervisorDefinition, simulatedAgents(300)], passivateAfterMs: 20 });
    await t.runtime.spawn('supervisor', { id: 'sp', input: { question: 'Passivated?' } });
    // The parent rests (it waits for events and a deadline): it leaves memory while the children work.
    await waitForView(t.runtime, 'sp', (v) => (v.children?.length ?? 0) === 3);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(t.runtime.liveAgents).toBeLessThanOrEqual(3);
    const done = await waitForView(t.runtime, 'sp', (v) => v.status === 'done');
    expect(done.status).toBe('done');
    expect((await outputOf(t, 'sp')).answered).toBe(3);
  });
});

describe('agents as tools (the reference agent)', () => {
  it("goes on without a child that does not answer within the tool's timeoutMs (a durable delay)", async () => {
    const fake = await startFakeOpenAI();
    try {
      // A collector never answers: the call's result says it timed out, and the model answers without it.
      const t = await start({ machines: [collector, agentDefinition({ llm: createOpenAiClient({ baseURL: fake.url }), defaults: { baseDelayMs: 1 } })] });
      fake.script({ toolCalls: [{ id: 'c1', name: 'slow', arguments: { task: 'Take your time.' } }] }, { content: 'Went on without it.' });
      await t.runtime.spawn('agent', { id: 'impatient', input: { tasks: ['Ask the slow one.'], tools: [{ name: 'slow', agent: { machine: 'collector', timeoutMs: 300 } }] } });
      const view = await waitForView(t.runtime, 'impatient', (v) => v.state === 'idle' && v.progress === 1);
      expect((view.context as AgentContext).results[0]!.response).toBe('Went on without it.');
      expect(fake.calls[1]!.rawMessages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'c1', content: JSON.stringify({ error: 'The agent did not answer within 300 ms.', timedOut: true }) });
      expect((await t.runtime.view('impatient:1:c1')).status).toBe('active');
    } finally {
      await fake.close();
    }
  });

  it("spawns one child per call with the call's task, and the child's response is the tool result", async () => {
    const fake = await startFakeOpenAI();
    try {
      const t = await start({ machines: [agentDefinition({ llm: createOpenAiClient({ baseURL: fake.url }), defaults: { baseDelayMs: 1 } })] });
      fake.script(
        { toolCalls: [{ id: 'c1', name: 'researcher', arguments: { task: 'Find the boiling point of water.' } }] },
        { content: '100 °C at sea level.' },
        { content: 'Water boils at 100 °C.' },
      );
      await t.runtime.spawn('agent', {
        id: 'lead',
        input: { tasks: ['When does water boil?'], tools: [{ name: 'researcher', description: 'Asks a research agent', agent: { machine: 'agent', input: { system: 'Be exact.' } } }] },
      });
      const lead = await waitForView(t.runtime, 'lead', (v) => v.state === 'idle' && v.progress === 1);
      const childId = 'lead:1:c1';
      expect(lead.children).toEqual([childId]);
      expect((lead.context as AgentContext).results[0]!.response).toBe('Water boils at 100 °C.');
      // The model was offered the agent tool with its fixed parameters, and read the child's answer as the result.
      expect(fake.calls[0]!.tools?.[0]).toMatchObject({ function: { name: 'researcher', parameters: { required: ['task'] } } });
      expect(fake.calls[1]!.rawMessages.map((m) => m.content)).toEqual(['Be exact.', 'Find the boiling point of water.']);
      expect(fake.calls[2]!.rawMessages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'c1', content: '100 °C at sea level.' });
      // Its task answered, the child finished: out of memory, its history still there to read.
      const child = await waitForView(t.runtime, childId, (v) => v.status === 'done');
      expect(child.parent).toBe('lead');
      expect(child.state).toBe('done');
      expect((child.context as AgentContext).results.map((r) => r.response)).toEqual(['100 °C at sea level.']);
      expect(t.runtime.liveAgents).toBe(1);
      expect((await t.runtime.actions(childId)).map((a) => a.action)).toEqual(['callLlm', 'runSideEffect']);
      // Its end came after its answer, and changed nothing: the call had its result.
      await vi.waitFor(async () => expect((await t.store.getAgent('lead'))?.inboxPosition).toBe(2));
      expect((await t.store.eventsAfter('lead', 0)).map((e) => e.event.type)).toEqual(['agent.response', 'agent.done']);
      const after = await t.runtime.view('lead');
      expect([after.state, after.progress, fake.calls.length]).toEqual(['idle', 1, 3]);
    } finally {
      await fake.close();
    }
  });

  it.each([
    { crash: 'while its LLM call runs', childCallsAfter: 1 },
    { crash: 'as its finishing checkpoint commits (its answer already reported)', childCallsAfter: 0 },
  ])('restored after a crash $crash, the child answers once and finishes once', async ({ childCallsAfter }) => {
    const childId = 'lead:1:c1';
    const midCall = childCallsAfter === 1;
    let hang = midCall;
    const model = recordingLlm((request, signal) => {
      if (request.messages.at(-1)?.role === 'tool') return 'Water boils at 100 °C.';
      if (lastUserText(request) === 'When does water boil?') {
        return { content: null, toolCalls: [{ id: 'c1', name: 'researcher', arguments: JSON.stringify({ task: 'Find the boiling point.' }) }], usage: NO_USAGE };
      }
      return hang ? hangUntilAborted(signal) : '100 °C at sea level.';
    });
    const agents = () => agentDefinition({ llm: model.llm, defaults: { baseDelayMs: 1 } });
    const file = tempDbFile();
    const crashable = crashableStore(await openSqliteStore(file));
    let crashed!: () => void;
    const crash = new Promise<void>((resolve) => (crashed = resolve));
    const store = midCall ? crashable.store : crashingAt(crashable, (w) => w.kind === 'checkpoint' && w.agentId === childId && w.status === 'done', crashed);
    const first = await start({ machines: [agents()], store });
    await first.runtime.spawn('agent', { id: 'lead', input: { tasks: ['When does water boil?'], tools: [{ name: 'researcher', agent: { machine: 'agent' } }] } });
    if (midCall) {
      await waitForView(first.runtime, childId, (v) => JSON.stringify(v.state) === JSON.stringify({ callingLLM: 'requesting' }));
      crashable.crash();
    } else {
      await crash;
    }
    await first.runtime.close().catch(() => undefined);
    hang = false;
    const callsBefore = model.callsFor('Find the boiling point.');

    const second = await start({ machines: [agents()], file });
    const child = await waitForView(second.runtime, childId, (v) => v.status === 'done');
    const lead = await waitForView(second.runtime, 'lead', (v) => v.state === 'idle' && v.progress === 1);
    expect(model.callsFor('Find the boiling point.') - callsBefore).toBe(childCallsAfter);
    expect((child.context as AgentContext).results.map((r) => r.response)).toEqual(['100 °C at sea level.']);
    expect((lead.context as AgentContext).results.map((r) => r.response)).toEqual(['Water boils at 100 °C.']);
    // Whichever process asked the parent's model again, it read the child's answer as the one result of the call.
    const toolMessages = model.calls.filter((c) => c.messages.at(-1)?.role === 'tool').map((c) => c.messages.filter((m) => m.role === 'tool'));
    expect(toolMessages.length).toBeGreaterThan(0);
    for (const messages of toolMessages) expect(messages).toEqual([{ role: 'tool', toolCallId: 'c1', content: '100 °C at sea level.' }]);
    // One answer and one end in the parent's inbox, in that order, under the child's keys.
    await vi.waitFor(async () => expect((await second.store.getAgent('lead'))?.inboxPosition).toBe(2));
    expect((await second.store.eventsAfter('lead', 0)).map((e) => [e.event.type, e.idempotencyKey])).toEqual([
      ['agent.response', `${childId}:1:response`],
      ['agent.done', `${childId}:ended`],
    ]);
    expect(second.runtime.liveAgents).toBe(1);
  });
});

/** The crashable store, crashed the moment a commit would take a write `matches` picks (nothing of that commit lands). */
function crashingAt(crashable: ReturnType<typeof crashableStore>, matches: (write: Write) => boolean, crashed: () => void): Store {
  return new Proxy(crashable.store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (property !== 'commit' || typeof value !== 'function') return value;
      return (writes: readonly Write[]) => {
        if (writes.some(matches)) {
          crashable.crash();
          crashed();
        }
        return (value as Store['commit']).call(target, writes);
      };
    },
  });
}

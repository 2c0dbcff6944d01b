// A tool's `concurrency`: the real `openai` client against the fake server, HTTP tools on a real
// local tool server, a real SQLite file. Many agents calling one limited tool never run more calls
// at once than its limit; the ones beyond wait (visible in views and metrics, not failing); an
// agent stopped while its call waits leaves the line and its call never runs.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentDefinition } from '../../../src/agents/reference/definition.js';
import { tool, type CodeTool } from '../../../src/agents/reference/tools.js';
import type { AgentContext } from '../../../src/agents/reference/types.js';
import { toolLimits } from '../../../src/core/tool-limits.js';
import { createServer } from '../../../src/http/app.js';
import { createOpenAiClient } from '../../../src/llm/openai-client.js';
import { createMetrics } from '../../../src/observability/metrics.js';
import type { AgentView } from '../../../src/runtime/views.js';
import { runtimesClosedAfterEach, waitForView, type TestRuntime } from '../../helpers/runtime.js';
import { startFakeOpenAI, type FakeOpenAI, type RecordedCall } from '../../support/fake-openai.js';
import { startToolServer, type ToolServer } from '../../support/tool-server.js';

let fake: FakeOpenAI | undefined;
let tools: ToolServer | undefined;
afterEach(async () => {
  await fake?.close();
  await tools?.close();
  fake = tools = undefined;
});
const startRuntime = runtimesClosedAfterEach();

/** The model calls `name` with each of `args` at the first turn, and answers once it has the results. */
function callsThenAnswers(name: (call: RecordedCall) => string, args: object[]) {
  return (call: RecordedCall) =>
    call.rawMessages.at(-1)?.role === 'tool' ? { content: `done: ${call.userContent}` } : { toolCalls: args.map((a) => ({ name: name(call), arguments: a })) };
}

async function start(codeTools: CodeTool[] = []): Promise<TestRuntime> {
  fake = await startFakeOpenAI();
  tools = await startToolServer();
  const llm = createOpenAiClient({ baseURL: fake.url });
  return startRuntime({ machines: [agentDefinition({ llm, defaults: { baseDelayMs: 1, maxAttempts: 3 }, tools: codeTools })] });
}

const idleAfter = (n: number) => (view: AgentView) => view.state === 'idle' && view.progress === n;

/** A tool answer each test releases by hand: the calls stay in flight until then. */
function heldAnswers() {
  let open!: () => void;
  const released = new Promise<void>((resolve) => (open = resolve));
  return { released, release: () => open() };
}

describe("a tool's concurrency", () => {
  it('HTTP tools: agents declaring the same URL share its limit; the calls beyond it wait, visibly, and all run once', async () => {
    const t = await start();
    const held = heldAnswers();
    let inFlight = 0;
    let most = 0;
    tools!.respond('slow', async (d) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await held.released;
      await new Promise((resolve) => setTimeout(resolve, 20));
      inFlight--;
      return { kind: 'json', body: { n: (d.body?.arguments as { n: number }).n } };
    });
    // Agent a4 names the tool differently: the limit is the URL's, so it shares it all the same.
    const nameOf = (id: string) => (id === 'a4' ? 'slow_alias' : 'slow');
    fake!.setReplyPolicy(callsThenAnswers((call) => nameOf(call.userContent.split(' ')[0]!), [{ n: 1 }, { n: 2 }]));
    const ids = ['a0', 'a1', 'a2', 'a3', 'a4'];
    for (const id of ids) {
      await t.runtime.spawn('agent', {
        id,
        input: { tasks: [`${id} work`], tools: [{ name: nameOf(id), url: tools!.url('slow'), concurrency: 3 }] },
      });
    }
    // Ten calls, three run: seven wait.
    const metrics = createMetrics();
    metrics.observeRuntime(t.runtime);
    const queued = async () => {
      const text = await metrics.render();
      const sum = (name: string) => [...text.matchAll(new RegExp(`^${name}\\{tool="[^"]+"\\} (\\d+)$`, 'gm'))].reduce((s, m) => s + Number(m[1]), 0);
      return { waiting: sum('durable_agents_tool_queue_depth'), inFlight: sum('durable_agents_tool_in_flight') };
    };
    await expect.poll(queued, { timeout: 5_000 }).toEqual({ waiting: 7, inFlight: 3 });
    expect(tools!.deliveries).toHaveLength(3);
    const views = await Promise.all(ids.map((id) => t.runtime.view(id)));
    expect(views.filter((v) => v.waiting === 'tool_capacity').length).toBeGreaterThan(0);
    // Waiting is not failing: every waiting agent is in its tools step, attempt 1.
    for (const v of views) {
      expect(v.state).toEqual({ sideEffect: 'runningTools' });
      expect((v.context as AgentContext).attempt).toBe(1);
    }
    // The view's `waiting` over HTTP too.
    const app = createServer({ runtime: t.runtime });
    const waitingOverHttp = await Promise.all(ids.map(async (id) => ((await (await app.request(`/agents/${id}`)).json()) as AgentView).waiting));
    expect(waitingOverHttp).toContain('tool_capacity');

    held.release();
    for (const id of ids) await waitForView(t.runtime, id, idleAfter(1), 10_000);
    expect(most).toBe(3);
    expect(tools!.deliveries).toHaveLength(10);
    expect([...tools!.byKey().values()].every((d) => d.length === 1)).toBe(true);
    for (const id of ids) {
      const view = await t.runtime.view(id);
      expect(view.waiting).toBeUndefined();
      expect((view.context as AgentContext).results.map((r) => r.response)).toEqual([`done: ${id} work`]);
    }
    expect(await queued()).toEqual({ waiting: 0, inFlight: 0 });
    expect(toolLimits.loads()).toEqual([]);
  });

  it('without concurrency, the same calls all run at once (the limit is what held them)', async () => {
    const t = await start();
    const held = heldAnswers();
    tools!.respond('free', async () => {
      await held.released;
      return { kind: 'text', body: 'ok' };
    });
    fake!.setReplyPolicy(callsThenAnswers(() => 'free', [{ n: 1 }, { n: 2 }]));
    for (const id of ['f0', 'f1', 'f2']) await t.runtime.spawn('agent', { id, input: { tasks: [`${id} work`], tools: [{ name: 'free', url: tools!.url('free') }] } });
    await expect.poll(() => tools!.deliveries.length, { timeout: 5_000 }).toBe(6);
    held.release();
    for (const id of ['f0', 'f1', 'f2']) await waitForView(t.runtime, id, idleAfter(1), 10_000);
  });

  it('code tools: one call at a time; an agent stopped while its call waits leaves the line, and its call never runs', async () => {
    const held = heldAnswers();
    const ran: string[] = [];
    const serial = tool({
      name: 'serial',
      parameters: z.object({}),
      concurrency: 1,
      execute: async (_args, { idempotencyKey }) => {
        ran.push(idempotencyKey);
        await held.released;
        return 'ok';
      },
    });
    const t = await start([serial]);
    fake!.setReplyPolicy(callsThenAnswers(() => 'serial', [{}]));
    await t.runtime.spawn('agent', { id: 'first', input: { tasks: ['first work'] } });
    await expect.poll(() => ran.length).toBe(1);
    await t.runtime.spawn('agent', { id: 'second', input: { tasks: ['second work'] } });
    await waitForView(t.runtime, 'second', (v) => v.waiting === 'tool_capacity');
    expect(toolLimits.loads()).toEqual([{ tool: 'serial', waiting: 1, inFlight: 1 }]);

    await t.runtime.stop('second');
    await expect.poll(() => toolLimits.loads()).toEqual([{ tool: 'serial', waiting: 0, inFlight: 1 }]);
    expect((await t.runtime.view('second')).waiting).toBeUndefined();

    held.release();
    await waitForView(t.runtime, 'first', idleAfter(1));
    // The stopped agent's call never ran: only the first agent's did, once.
    expect(ran).toEqual([expect.stringMatching(/^first:1:/)]);
    expect(toolLimits.loads()).toEqual([]);
  });

  it('refuses a concurrency that is not a positive integer, in code and in a spawn input', async () => {
    expect(() => tool({ name: 'bad', parameters: z.object({}), concurrency: 0, execute: () => null })).toThrow(/positive integer/);
    expect(() => tool({ name: 'bad', parameters: z.object({}), concurrency: 2.5, execute: () => null })).toThrow(/positive integer/);
    const t = await start();
    const app = createServer({ runtime: t.runtime });
    for (const concurrency of [0, -1, 1.5, '2']) {
      const res = await app.request('/agents', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ machine: 'agent', input: { tools: [{ name: 'x', url: 'http://127.0.0.1:9/x', concurrency }] } }),
      });
      expect(res.status, String(concurrency)).toBe(400);
    }
  });
});

// Budgets over HTTP: `input.budget` at spawn (400 for a limit in dollars without a price), the
// spending in the agent's view, `budget.raise` (202, or 409 when it cannot raise anything or the
// agent is parked for another reason, nothing stored then), with the runtime on a real SQLite file.
import { afterEach, describe, expect, it } from 'vitest';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import type { AgentContext } from '../../src/agents/reference/types.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import { budgetText } from '../../src/http/dashboard/agent-summary.js';
import type { AgentView } from '../../src/runtime/views.js';
import { getJson, isIdleWith, postJson, spawn, testApp, waitForView, type TestApp } from './harness.js';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const PRICES = { 'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 } };
const contextOf = (view: AgentView) => view.context as AgentContext;
const parkedOnBudget = (view: AgentView) => view.state === 'failed' && contextOf(view).lastError?.code === 'budget_exceeded';

async function send(id: string, event: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const res = await postJson(t!.app, `/agents/${id}/events`, event);
  return { status: res.status, body: await res.json() };
}

describe('budgetText (the dashboard)', () => {
  it('shows what was spent against each limit; nothing without a budget', () => {
    expect(budgetText({ budget: { maxTotalTokens: 5000, maxCostUsd: 0.5 }, spent: { totalTokens: 1204, costUsd: 0.003129 } })).toBe('1,204 of 5,000 tokens · $0.003129 of $0.50');
    expect(budgetText({ budget: { maxTotalTokens: 10 }, spent: { totalTokens: 0, costUsd: 0 } })).toBe('0 of 10 tokens · $0.00');
    expect(budgetText({ budget: { maxCostUsd: 20 }, spent: { totalTokens: 9, costUsd: 12.5 } })).toBe('9 tokens · $12.50 of $20.00');
    expect(budgetText({ usage: { totalTokens: 9 } })).toBeUndefined();
  });
});

describe('budgets over HTTP', () => {
  it('spawn with a budget; exceeded, the view shows what was spent; budget.raise answers 202 and the agent finishes', async () => {
    t = await testApp({ machines: [agentDefinition({ llm: createSimulatedLlm(), prices: PRICES })] });
    await spawn(t.app, 'h1', { tasks: ['Summarize the report', 'Extract the entities'], budget: { maxTotalTokens: 5, maxCostUsd: 1 } });
    const parked = await waitForView(t.app, 'h1', parkedOnBudget);
    const spent = contextOf(parked).spent!;
    expect(spent.totalTokens).toBeGreaterThanOrEqual(5);
    expect(spent.totalTokens).toBe(contextOf(parked).usage.totalTokens);
    expect(spent.costUsd).toBeGreaterThan(0);
    expect(contextOf(parked).budget).toEqual({ maxTotalTokens: 5, maxCostUsd: 1, price: PRICES['gpt-4o-mini'] });
    expect(parked.progress).toBe(1);
    // The dashboard's agent page shows it too.
    const page = await (await t.app.request('/ui/agents/h1')).text();
    expect(page).toContain(`<span id="budget">${budgetText(parked.context)}</span>`);
    expect(budgetText(parked.context)).toMatch(new RegExp(`^${spent.totalTokens} of 5 tokens · \\$0\\.\\d+ of \\$1\\.00$`));

    // Not above the current limit: 409, nothing stored.
    const events = (await t.store.eventsAfter('h1', 0)).length;
    const same = await send('h1', { type: 'budget.raise', maxTotalTokens: 5 });
    expect(same.status).toBe(409);
    expect(same.body.error).toMatchObject({ code: 'conflict', message: expect.stringContaining('only raises') });
    expect(await t.store.eventsAfter('h1', 0)).toHaveLength(events);

    expect((await send('h1', { type: 'budget.raise', maxTotalTokens: 1_000_000 })).status).toBe(202);
    const done = await waitForView(t.app, 'h1', isIdleWith(2));
    expect(contextOf(done).budget?.maxTotalTokens).toBe(1_000_000);
    expect(contextOf(done).spent!.totalTokens).toBe(contextOf(done).usage.totalTokens);
  });

  it('answers 400 for maxCostUsd when the model has no price, naming the field and the model; stores nothing', async () => {
    t = await testApp();
    const res = await postJson(t.app, '/agents', { machine: 'agent', id: 'h2', input: { tasks: ['x'], budget: { maxCostUsd: 2 } } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('invalid_input');
    expect(JSON.stringify(body.error)).toMatch(/budget\.maxCostUsd|"budget","maxCostUsd"/);
    expect(JSON.stringify(body.error)).toContain('no price is known for the model \\"gpt-4o-mini\\"');
    expect((await getJson(t.app, '/agents/h2')).status).toBe(404);
  });

  it('answers 400 for a malformed budget, 422 for a malformed budget.raise', async () => {
    t = await testApp();
    for (const budget of [{}, { maxTotalTokens: 0 }, { maxTotalTokens: '100' }, { maxTokens: 100 }]) {
      const res = await postJson(t.app, '/agents', { machine: 'agent', input: { budget } });
      expect(res.status, JSON.stringify(budget)).toBe(400);
    }
    await spawn(t.app, 'h3', { budget: { maxTotalTokens: 100 } });
    for (const event of [{ type: 'budget.raise' }, { type: 'budget.raise', maxTotalTokens: -5 }, { type: 'budget.raise', maxTotalTokens: 200, by: 'me' }]) {
      // An event payload the machine refuses is a 422 invalid_event (docs/http-api.md).
      const res = await send('h3', event);
      expect([res.status, res.body.error.code], JSON.stringify(event)).toEqual([422, 'invalid_event']);
    }
  });

  it('budget.raise while the agent works is taken for later (202); without a budget, or for a limit it has not, 409', async () => {
    t = await testApp();
    await spawn(t.app, 'h4', { budget: { maxTotalTokens: 100 } });
    expect((await send('h4', { type: 'budget.raise', maxTotalTokens: 300 })).status).toBe(202);
    await waitForView(t.app, 'h4', (view) => contextOf(view).budget?.maxTotalTokens === 300);
    const noCost = await send('h4', { type: 'budget.raise', maxCostUsd: 1 });
    expect(noCost.status).toBe(409);
    expect(noCost.body.error.message).toMatch(/no maxCostUsd limit/);

    await spawn(t.app, 'h5', {});
    const none = await send('h5', { type: 'budget.raise', maxTotalTokens: 300 });
    expect(none.status).toBe(409);
    expect(none.body.error.message).toMatch(/no budget/);
  });

  it('answers 409 to budget.raise for an agent parked in failed for another reason (retry is what it needs)', async () => {
    t = await testApp({ machines: [agentDefinition({ llm: createSimulatedLlm({ faultRate: 1 }), defaults: { maxAttempts: 1 } })] });
    await spawn(t.app, 'h6', { tasks: ['x'], budget: { maxTotalTokens: 100 } });
    const failed = await waitForView(t.app, 'h6', (view) => view.state === 'failed');
    expect(contextOf(failed).lastError?.code).not.toBe('budget_exceeded');
    const res = await send('h6', { type: 'budget.raise', maxTotalTokens: 300 });
    expect(res.status).toBe(409);
    expect(res.body.error.message).toMatch(/failed for another reason .*send retry/);
  });
});

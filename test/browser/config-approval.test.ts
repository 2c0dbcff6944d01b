// A team serving its own agent, end to end (issue 22): real `durable-agents serve --config` processes
// on one temp SQLite file, the real `openai` client talking to the fake OpenAI server, and a person in
// Chromium (test/helpers/chromium.ts). The config (test/fixtures/ticket.config.ts) registers a
// `ticket` machine of its own and a code tool, `issue_refund`, that runs only once approved; the
// tool appends `<idempotencyKey> <pid>` to a file for each execution, so that executions are counted
// across processes.
//
// One journey, two SIGKILLs:
//   server A: a ticket spawned and assigned over HTTP; an agent asked to refund, whose LLM answers
//             with a call of issue_refund; the page shows the call waiting for approval → SIGKILL.
//   server B: the call is still pending (the LLM not asked again); Approve pressed in B's page; the
//             tool runs, its result is committed, the LLM's next answer is held mid-stream → SIGKILL.
//   server C: the agent asks the LLM again with the recorded result (the tool is not run again) and
//             finishes; its page shows the answer. The ticket is still assigned; its page's `resolve`
//             form (from the machine's zod schema) moves it to resolved.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentView } from '../../src/runtime/views.js';
import { launchChromium } from '../helpers/chromium.js';
import { api, killAllServers, parseLine, startServer, TOKEN, waitForAgent as pollAgent, type ServerProcess } from '../helpers/server-process.js';
import { tempDir } from '../helpers/temp.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SCREENSHOTS = path.join(ROOT, 'test-output', 'screenshots');
const CONFIG = 'test/fixtures/ticket.config.ts';
/** How long a UI condition may take to hold (each step is milliseconds when things work). */
const WAIT = { timeout: 15_000 };
/** The model answers this task with a call of issue_refund, then, once it has the result, with FINAL_ANSWER. */
const TASK = 'Refund ticket T-1 in full';
const CALL_ID = 'call_refund';
const KEY = `refunder:1:${CALL_ID}`;
const FINAL_ANSWER = 'Refunded 1250 cents on ticket T-1.';

let dir: string;
let refundLog: string;
let fake: FakeOpenAI;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const pageErrors: string[] = [];
const savedRefundLog = process.env.REFUND_LOG;

beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  dir = tempDir('config-approval-');
  refundLog = path.join(dir, 'refunds.log');
  process.env.REFUND_LOG = refundLog; // the server processes inherit it; the config's tool writes there
  fake = await startFakeOpenAI();
  fake.setReplyPolicy((call) => {
    if (call.userContent !== TASK) return undefined;
    const toolResultsIn = call.rawMessages.some((m) => m.role === 'tool');
    return toolResultsIn
      ? { content: FINAL_ANSWER }
      : { toolCalls: [{ id: CALL_ID, name: 'issue_refund', arguments: { ticketId: 'T-1', amountCents: 1250 } }] };
  });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  page = await context.newPage();
  page.on('pageerror', (err) => pageErrors.push(err.message));
});

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await killAllServers();
  await fake?.close();
  if (savedRefundLog === undefined) delete process.env.REFUND_LOG;
  else process.env.REFUND_LOG = savedRefundLog;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

afterEach(() => {
  expect(pageErrors, 'errors thrown by the dashboard script').toEqual([]);
});

const serveConfig = (db: string) => startServer({ store: ['--db', db], llmUrl: fake.url, extra: ['--config', CONFIG] });

/** SIGKILLs a server and waits until it is gone. */
async function kill9(server: ServerProcess): Promise<void> {
  server.child.kill('SIGKILL');
  expect((await server.exit).signal).toBe('SIGKILL');
}

/** Polls the agent's view until `done` holds; if it never does, the error says why (its lastError, the server's warnings). */
async function waitForAgent(server: ServerProcess, id: string, done: (v: AgentView) => boolean): Promise<AgentView> {
  try {
    return await pollAgent(server, id, done);
  } catch (err) {
    const view = (await api(server, 'GET', `/agents/${id}`).catch(() => undefined))?.body as AgentView | undefined;
    const warnings = server.output.filter((line) => Number(parseLine(line)?.level) >= 40);
    throw new Error(`${(err as Error).message}\nlastError: ${JSON.stringify((view?.context as { lastError?: unknown } | null)?.lastError)}\nserver warnings:\n${warnings.join('\n')}`);
  }
}

/** The lines issue_refund appended: one per execution, `[key, pid]`. */
function executions(): [string, number][] {
  if (!fs.existsSync(refundLog)) return [];
  return fs
    .readFileSync(refundLog, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [key, pid] = line.split(' ');
      return [key!, Number(pid)];
    });
}

const activeState = (state: string) => `svg.chart g.state.active[data-state="${state}"]`;
const shot = (name: string) => page.screenshot({ path: path.join(SCREENSHOTS, name), fullPage: true });
const context_ = (view: AgentView) => view.context as Record<string, any>;

describe('serve --config: a team\'s own machine and approval-gated code tool, in Chromium, across SIGKILLs', () => {
  it('approves the code tool in the dashboard across two kill -9s: the task finishes, the tool ran once, the ticket keeps its state and takes an event from its form', { timeout: 120_000 }, async () => {
    const db = path.join(dir, 'agents.db');

    // --- server A -------------------------------------------------------------------------------
    const a = await serveConfig(db);
    expect(a.output.join('\n')).toMatch(/config loaded/);
    const machines = (await api(a, 'GET', '/machines')).body as unknown;
    expect(JSON.stringify(machines)).toContain('"ticket"');

    // The team's machine, over HTTP: spawned, then moved by an event its zod schema checks.
    expect((await api(a, 'POST', '/agents', { machine: 'ticket', id: 't-1', input: { title: 'Double charge' } })).status).toBe(201);
    expect((await api(a, 'GET', '/agents/t-1')).body).toMatchObject({ machine: 'ticket', state: 'open', status: 'active' });
    const refused = await api(a, 'POST', '/agents/t-1/events', { type: 'assign', assignee: 42 });
    expect(refused.status).toBe(422); // the machine's zod schema refuses the payload
    expect((await api(a, 'POST', '/agents/t-1/events', { type: 'assign', assignee: 'ana' })).status).toBe(202);
    const assigned = await waitForAgent(a, 't-1', (v) => v.state === 'inProgress');
    expect(assigned.context).toMatchObject({ title: 'Double charge', assignee: 'ana', history: ['assign'] });

    // The reference agent, offered the config's tool: the model calls it, the agent waits for a person.
    expect((await api(a, 'POST', '/agents', { machine: 'agent', id: 'refunder', input: { tasks: [TASK] } })).status).toBe(201);
    const waiting = await waitForAgent(a, 'refunder', (v) => JSON.stringify(v.state) === '{"sideEffect":"awaitingApproval"}');
    expect(context_(waiting).pendingApprovals).toEqual([expect.objectContaining({ callId: CALL_ID, name: 'issue_refund' })]);
    // The model was shown the code tool (no tool in the spawn input: the config's tools are offered to every agent).
    const [first] = fake.callsFor(TASK);
    expect(JSON.stringify(first!.tools)).toContain('"issue_refund"');

    // The person logs in and sees the pending call on A's page.
    await page.goto(`${a.url}/`);
    expect(new URL(page.url()).pathname).toBe('/ui/login');
    await page.fill('input[name=token]', TOKEN);
    await Promise.all([page.waitForURL(`${a.url}/`, WAIT), page.click('button[type=submit]')]);
    await page.goto(`${a.url}/ui/agents/refunder`);
    const pending = `#approvals [data-approval="${CALL_ID}"]`;
    await page.waitForSelector(pending, WAIT);
    await page.waitForSelector(activeState('sideEffect.awaitingApproval'), WAIT);
    expect(await page.textContent(pending)).toContain('issue_refund');
    expect(await page.textContent(pending)).toContain('"amountCents": 1250');
    expect(await page.textContent(pending)).toContain(KEY);
    await shot('config-awaiting-approval.png');
    expect(executions()).toEqual([]);

    // --- kill -9 while the agent awaits approval ---------------------------------------------------
    await kill9(a);
    const b = await serveConfig(db);

    // Restored in B: the call is still pending, and the committed answer is not asked for again.
    await waitForAgent(b, 'refunder', (v) => JSON.stringify(v.state) === '{"sideEffect":"awaitingApproval"}');
    expect(fake.callsFor(TASK)).toHaveLength(1);

    // The next answer (the one with the tool's result) is held after its first delta, so that B dies mid-call.
    const hold = fake.holdAfter(1);
    // The login cookie is for 127.0.0.1 and the same token: B's pages open without logging in again.
    await page.goto(`${b.url}/ui/agents/refunder`);
    expect(new URL(page.url()).pathname).toBe('/ui/agents/refunder');
    await page.waitForSelector(pending, WAIT);
    expect(executions()).toEqual([]);
    await page.click(`${pending} form[data-event="tool.approve"] button`);
    await page.waitForSelector('#approvals', { ...WAIT, state: 'detached' });

    // The tool ran once, in B; the LLM is being asked with its result.
    const held = await hold.reached;
    expect(held.rawMessages.find((m) => m.role === 'tool')).toBeDefined();
    expect(executions()).toEqual([[KEY, b.child.pid]]);
    // The result is committed (the action log is written with the checkpoint that records the effect).
    await expect
      .poll(async () => {
        const { items } = (await api(b, 'GET', '/agents/refunder/actions')).body as { items: { action: string; result: unknown }[] };
        return JSON.stringify(items.filter((i) => i.action === 'runTools').map((i) => i.result));
      }, WAIT)
      .toContain(KEY);

    // --- kill -9 while the LLM writes the answer that follows the tool's result ---------------------
    await kill9(b);
    await expect.poll(() => held.outcome, WAIT).toBe('aborted'); // B hung up mid-answer
    const c = await serveConfig(db);

    // Restored in C: the LLM is asked again with the recorded result; the tool is not run again.
    const done = await waitForAgent(c, 'refunder', (v) => v.state === 'idle' && v.progress === 1);
    expect(context_(done).results).toEqual([expect.objectContaining({ seq: 1, task: TASK, response: FINAL_ANSWER })]);
    expect(executions()).toEqual([[KEY, b.child.pid]]);
    const calls = fake.callsFor(TASK);
    expect(calls).toHaveLength(3);
    const toolMessage = calls[2]!.rawMessages.find((m) => m.role === 'tool');
    expect(JSON.stringify(toolMessage)).toContain(KEY); // the result B's execution returned

    // C's page shows the task finished: the tool's result with its key, the answer.
    await page.goto(`${c.url}/ui/agents/refunder`);
    await page.waitForSelector(activeState('idle'), WAIT);
    await page.locator('#progress', { hasText: /^1$/ }).waitFor(WAIT);
    const toolRow = `#conversation li.message.tool[data-call="${CALL_ID}"]`;
    await page.waitForSelector(`${toolRow} .ok`, WAIT);
    expect(await page.textContent(toolRow)).toContain(KEY);
    await page.waitForSelector(`#conversation .response >> text=${FINAL_ANSWER}`, WAIT);
    expect(await page.$('#approvals')).toBeNull();
    await shot('config-tool-approved.png');

    // The ticket survived both kills with its state and context...
    expect((await api(c, 'GET', '/agents/t-1')).body).toMatchObject({ machine: 'ticket', status: 'active', state: 'inProgress', context: assigned.context });
    // ...and its page offers the forms of its events: the ones inProgress takes shown, with the schema's fields.
    await page.goto(`${c.url}/ui/agents/t-1`);
    await page.waitForSelector(activeState('inProgress'), WAIT);
    const resolve = 'form[data-event="resolve"]';
    await page.waitForSelector(resolve, WAIT);
    expect(await page.isVisible('form[data-event="assign"]')).toBe(false);
    expect(await page.isVisible('form[data-event="reopen"]')).toBe(false);
    expect(await page.$$eval(`${resolve} input[name]`, (inputs) => inputs.map((i) => [i.getAttribute('name'), i.getAttribute('data-kind'), i.hasAttribute('required')]))).toEqual([
      ['resolution', 'text', true],
      ['refundCents', 'json', false],
    ]);
    await page.fill(`${resolve} input[name=resolution]`, 'refunded by the agent');
    await page.fill(`${resolve} input[name=refundCents]`, '1250');
    await page.click(`${resolve} button`);
    await page.waitForSelector(activeState('resolved'), WAIT);
    await page.waitForSelector('form[data-event="reopen"]:not([hidden])', WAIT);
    expect(await page.isVisible(resolve)).toBe(false);
    await shot('config-ticket-resolved.png');
    const resolved = (await api(c, 'GET', '/agents/t-1')).body as AgentView;
    expect(resolved).toMatchObject({ state: 'resolved', status: 'active' });
    expect(resolved.context).toMatchObject({ assignee: 'ana', resolution: 'refunded by the agent', refundCents: 1250, history: ['assign', 'resolve'] });
  });
});

// The dashboard's routes without a browser (test/browser/ drives it in Chromium): the pages, the
// script, the login cookie and how they sit beside the JSON API.
import { afterEach, describe, expect, it } from 'vitest';
import { createMachine } from 'xstate';
import { z } from 'zod';
import { eventFields } from '../../src/http/dashboard/index.js';
import { stateText } from '../../src/core/state-value.js';
import { activeStatePaths, layoutStatechart, transitionLabel } from '../../src/http/dashboard/statechart.js';
import { agentEventSchemas } from '../../src/agents/reference/schemas.js';
import { agentMachine } from '../../src/agents/reference/machine.js';
import { readExchange } from '../../src/http/dashboard/exchange.js';
import type { ActionRecord } from '../../src/store/store.js';
import { startToolServer, type ToolServer } from '../support/tool-server.js';
import { isIdleWith, JSON_HEADERS, postJson, readJson, spawn, testApp, waitForView, type TestApp } from './harness.js';

const TOKEN = 'dash-token';
const HTML = { accept: 'text/html,application/xhtml+xml' };

let t: TestApp;
let tools: ToolServer | undefined;
afterEach(async () => {
  await t?.close();
  await tools?.close();
  tools = undefined;
});

function login(app: TestApp['app'], token: string, next?: string) {
  const form = new URLSearchParams({ token, ...(next === undefined ? {} : { next }) });
  return app.request('/ui/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
  });
}

/** `name=value` of a Set-Cookie header, for the next request's Cookie header. */
const cookiePair = (res: Response) => res.headers.get('set-cookie')!.split(';')[0]!;

describe('dashboard pages', () => {
  it('serves the agents list at / with status, state and progress, filtered by machine, status and text', async () => {
    t = await testApp();
    await spawn(t.app, 'a1', { tasks: ['one'] });
    await waitForView(t.app, 'a1', isIdleWith(1));
    await spawn(t.app, 't1', {}, 'toggle');

    const res = await t.app.request('/', { headers: HTML });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<tr data-agent="a1">');
    expect(html).toContain('<tr data-agent="t1">');
    expect(html).toMatch(/data-cell="state">idle</);
    expect(html).toContain('href="/ui/agents/a1"');

    const only = async (query: string) => {
      const page = await (await t.app.request(`/${query}`)).text();
      return [...page.matchAll(/<tr data-agent="([^"]+)">/g)].map((m) => m[1]);
    };
    expect(await only('?machine=toggle')).toEqual(['t1']);
    expect(await only('?status=done')).toEqual([]);
    expect(await only('?q=A1')).toEqual(['a1']);
    expect(await only('?q=off')).toEqual(['t1']); // the toggle's state
    expect(await only('?status=bogus&cursor=not-a-cursor')).toEqual(['a1', 't1']); // bad filters are ignored
  });

  it("serves an agent's page: the statechart with the current state highlighted, checkpoints, actions and event forms", async () => {
    t = await testApp();
    await spawn(t.app, 'a1', { tasks: ['Summarize the report'] });
    await waitForView(t.app, 'a1', isIdleWith(1));

    const res = await t.app.request('/ui/agents/a1');
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('<svg class="chart"');
    for (const state of ['idle', 'callingLLM', 'callingLLM.requesting', 'callingLLM.backingOff', 'persisted', 'sideEffect', 'failed', 'done']) {
      expect(html).toContain(`data-state="${state}"`);
    }
    expect(html).toContain('<g class="state atomic active" data-state="idle">');
    expect([...html.matchAll(/class="state [a-z]+ active"/g)]).toHaveLength(1);
    // budget.raise is not offered: this agent has no budget.
    expect(html).toContain('data-accepted="finish task.add"');
    expect(html).toMatch(/<form data-event="retry" hidden=""/);
    expect(html).toMatch(/<form data-event="task.add" class="with-fields"><button type="submit">task.add<\/button><input type="text" name="task" required=""/);
    expect(html).toContain('<button type="button" data-seq="4">');
    expect(html).toContain('<tr data-action="callLlm">');
    expect(html).toContain('Simulated answer (gpt-4o-mini) to: Summarize the report');
    expect(html).toContain('<tr data-action="runSideEffect">');
    expect(html).toContain('<code>a1:1</code>');
  });

  it('shows the statechart at its natural size in a box that scrolls, and alone, full size, at chart.svg', async () => {
    t = await testApp();
    await spawn(t.app, 'a1', { tasks: ['Summarize the report'] });
    await waitForView(t.app, 'a1', isIdleWith(1));

    const html = await (await t.app.request('/ui/agents/a1')).text();
    // Its width and height are the viewBox's, in pixels, and no rule shrinks it to the card: the box scrolls.
    const [, w, h, width, height] = /<svg class="chart" viewBox="0 0 (\d+) (\d+)" width="(\d+)" height="(\d+)"/.exec(html)!;
    expect([width, height]).toEqual([w, h]);
    expect(Number(width)).toBeGreaterThan(650); // wider than the card: what was squeezed before
    expect(html).toMatch(/svg\.chart \{[^}]*max-width: none/);
    expect(html).not.toMatch(/svg\.chart \{[^}]*height: auto/);
    expect(html).toMatch(/\.chart-wrap \{[^}]*overflow: auto; max-height: 75vh/);
    expect(html).toMatch(/<div class="chart-wrap"><svg class="chart"/);
    expect(html).toContain('<a href="/ui/agents/a1/chart.svg" target="_blank" rel="noopener">Open full size</a>');

    const res = await t.app.request('/ui/agents/a1/chart.svg');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/svg+xml; charset=utf-8');
    const svg = await res.text();
    expect(svg).toMatch(new RegExp(`^<\\?xml version="1.0" encoding="utf-8"\\?>\n<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}"`));
    expect(svg).toContain('<style>');
    expect(svg).toContain('<g class="state atomic active" data-state="idle">');
    expect(svg).not.toContain('<html');

    expect((await t.app.request('/ui/agents/nobody/chart.svg')).status).toBe(404);
  });

  it("gives a wildcard descriptor's event form a field for the event's type", async () => {
    const machine = createMachine({
      id: 'wild',
      initial: 'idle',
      states: { idle: { on: { '*': 'caught', 'event.*': 'caught', go: 'caught' } }, caught: { on: { reset: 'idle' } } },
    });
    const events = { 'event.*': z.object({ type: z.string(), note: z.string() }) };
    t = await testApp({ machines: [{ name: 'wild', machine, events }] });
    await spawn(t.app, 'w1', {}, 'wild');
    const html = await (await t.app.request('/ui/agents/w1')).text();
    expect(html).toContain('data-accepted="* event.* go reset"');
    // A server that runs its agents offers them events, with no read-only notice.
    expect(html).not.toContain('id="read-only"');
    expect(html).not.toMatch(/<body[^>]* data-read-only/);
    expect(html).toContain('<form data-event="go"><button type="submit">go</button></form>');
    // The script sets every named input on the event: the typed `type` replaces the descriptor.
    expect(html).toContain(
      '<form data-event="*" class="with-fields"><button type="submit">*</button><input type="text" name="type" required="" aria-label="* type" placeholder="type (*)" data-kind="text"/></form>',
    );
    // The descriptor's schema gives its form's fields.
    expect(html).toMatch(/<form data-event="event\.\*" class="with-fields"><button type="submit">event\.\*<\/button><input type="text" name="type" required="" [^>]*\/><input type="text" name="note" required=""/);
  });

  it('answers an unknown agent with an HTML 404 page, and leaves the JSON API 404s as they were', async () => {
    t = await testApp();
    const page = await t.app.request('/ui/agents/nope');
    expect(page.status).toBe(404);
    expect(await page.text()).toContain('No agent with id &quot;nope&quot;.');

    for (const url of ['/no-such-route', '/ui/no-such-page', '/agents/nope']) {
      const res = await t.app.request(url, { headers: HTML });
      expect(res.status, url).toBe(404);
      expect((await readJson(res)).error.code, url).toBe('not_found');
    }
  });

  it('serves its script as JavaScript that parses', async () => {
    t = await testApp();
    const res = await t.app.request('/ui/app.js');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/javascript/);
    const script = await res.text();
    expect(() => new Function(script)).not.toThrow();
  });
});

/** A task that names the tool, so the simulated model calls it (with `{"text": <what follows the name>}`); markup in it must come out escaped. */
const TOOL_TASK = 'Ask lookup about <b>Oslo</b> & "rain"';
const awaitingApproval = (view: { state: unknown }) => JSON.stringify(view.state) === JSON.stringify({ sideEffect: 'awaitingApproval' });
/** The page's section with that `data-live` name, up to the next live part (they do not nest). */
const section = (html: string, name: string) => {
  const start = html.indexOf(`<div data-live="${name}">`);
  expect(start, name).toBeGreaterThanOrEqual(0);
  const next = html.indexOf(' data-live=', start + 20);
  return html.slice(start, next < 0 ? undefined : next);
};

describe('dashboard: the exchange and approvals', () => {
  /** The tool server the agent's `lookup` tool is on (closed after the test). */
  async function agentWaitingForApproval(): Promise<ToolServer> {
    const server = await startToolServer();
    tools = server;
    server.respond('lookup', { kind: 'json', body: { answer: '<i>wet</i>' } });
    t = await testApp();
    await spawn(t.app, 'ap1', { tasks: [TOOL_TASK], tools: [{ name: 'lookup', url: server.url('lookup'), approval: true }] });
    await waitForView(t.app, 'ap1', awaitingApproval);
    return server;
  }

  it('shows a pending call with its name, key and escaped arguments, and Approve / Reject forms carrying its call id', async () => {
    const server = await agentWaitingForApproval();
    const html = await (await t.app.request('/ui/agents/ap1')).text();
    const approvals = section(html, 'approvals');
    expect(approvals).toContain('<div class="approval" data-approval="call_0_0">');
    expect(approvals).toContain('<code>lookup</code>');
    expect(approvals).toContain('<code>ap1:1:call_0_0</code>');
    expect(approvals).toContain('&quot;text&quot;: &quot;about &lt;b&gt;Oslo&lt;/b&gt; &amp; \\&quot;rain\\&quot;&quot;');
    expect(approvals).toMatch(/<form data-event="tool.approve" class="decision"><input type="hidden" name="callId" value="call_0_0"\/><button type="submit" class="approve">Approve<\/button><\/form>/);
    expect(approvals).toMatch(/<form data-event="tool.reject" class="decision"><input type="hidden" name="callId" value="call_0_0"\/><input type="text" name="reason"/);
    expect(html).not.toContain('<b>Oslo</b>');

    const conversation = section(html, 'conversation');
    expect(conversation).toContain('<div class="task" data-task="1" data-current="true">');
    expect(conversation).toContain('<li class="message user" data-role="user"><span class="role">user</span><div class="text">Ask lookup about &lt;b&gt;Oslo&lt;/b&gt; &amp; &quot;rain&quot;</div></li>');
    expect(conversation).toMatch(/<div class="tool-call" data-call="call_0_0">calls <code>lookup<\/code>.*key <code>ap1:1:call_0_0<\/code>/);
    expect(conversation).not.toContain('data-role="tool"'); // nothing ran yet
    expect(conversation).not.toContain('not shown');
    expect(server.deliveries).toHaveLength(0);
  });

  it('after an approval, shows the tool result matched to its call (ok, key), the response, turns and tokens, and the tools row of the log', async () => {
    const server = await agentWaitingForApproval();
    expect((await postJson(t.app, '/agents/ap1/events', { type: 'tool.approve', callId: 'call_0_0' })).status).toBe(202);
    const view = await waitForView(t.app, 'ap1', isIdleWith(1));
    const { results, usage } = view.context as { results: { response: string; usage: { promptTokens: number; completionTokens: number; totalTokens: number } }[]; usage: typeof results[0]['usage'] };
    expect(server.deliveries.map((d) => d.idempotencyKey)).toEqual(['ap1:1:call_0_0']);

    const html = await (await t.app.request('/ui/agents/ap1')).text();
    expect(section(html, 'approvals')).not.toContain('data-approval');
    const conversation = section(html, 'conversation');
    expect(conversation).toContain('<div class="task" data-task="1">'); // done: read back from the task's last LLM call
    expect(conversation).toMatch(
      /<li class="message tool" data-role="tool" data-call="call_0_0"><span class="role">tool<\/span> <span class="ok">ok<\/span> <code>lookup<\/code>.*key <code>ap1:1:call_0_0<\/code>.*\{&quot;answer&quot;:&quot;&lt;i&gt;wet&lt;\/i&gt;&quot;\}/,
    );
    expect(results[0]!.response).toContain('tool results:');
    expect(conversation).toContain(`<span class="role">response</span><div class="text">${escapeHtml(results[0]!.response)}</div>`);
    expect(conversation.split(escapeHtml(results[0]!.response))).toHaveLength(2); // once, as the response
    const u = results[0]!.usage;
    expect(conversation).toContain(`2 turns · ${u.promptTokens} + ${u.completionTokens} = ${u.totalTokens} tokens in 2 LLM calls`);
    expect(conversation).toContain(`(all tasks: ${usage.promptTokens} + ${usage.completionTokens} = ${usage.totalTokens} tokens in 2 LLM calls)`);

    const log = html.slice(html.indexOf('<tbody id="actions"'));
    expect(log).toMatch(/<tr data-action="runTools">.*<div class="call" data-call="call_0_0"><code>lookup<\/code>.*key <code>ap1:1:call_0_0<\/code>.*<span class="ok">ok<\/span> <code>lookup<\/code>/s);
    // The first LLM row: the task asked, and the tool call it answered with.
    expect(log).toMatch(/<tr data-action="callLlm">.*1 message · 1 tool<\/div><div class="text">Ask lookup about &lt;b&gt;Oslo&lt;\/b&gt;.*→ <code>lookup<\/code>/s);
  });

  it('after a rejection, shows the refused call as an error and never calls the tool', async () => {
    const server = await agentWaitingForApproval();
    expect((await postJson(t.app, '/agents/ap1/events', { type: 'tool.reject', callId: 'call_0_0', reason: 'not <now>' })).status).toBe(202);
    await waitForView(t.app, 'ap1', isIdleWith(1));
    const conversation = section(await (await t.app.request('/ui/agents/ap1')).text(), 'conversation');
    expect(conversation).toMatch(/data-call="call_0_0"><span class="role">tool<\/span> <span class="fail">error<\/span>.*A person rejected this call: not &lt;now&gt;/);
    expect(server.deliveries).toHaveLength(0);
  });
});

describe('dashboard: reading the exchange', () => {
  const kindOf = (src: string) => (src === 'callLlm' ? 'llm' : src === 'runTools' ? 'tools' : 'call') as 'llm' | 'tools' | 'call';
  const totals = { promptTokens: 3, completionTokens: 2, totalTokens: 5, llmCalls: 1 };
  const toolsRow = (seq: number, callId: string, ok: boolean): ActionRecord => ({
    seq: 10 + seq,
    action: 'runTools',
    payload: { id: 'tools', input: { seq, calls: [{ id: callId, name: 'f', arguments: '{}' }] } },
    result: { ok: true, output: [{ callId, name: 'f', ok, content: ok ? 'fine' : '{"error":"no"}' }], ms: 1 },
    createdAt: '2026-01-01T00:00:00.000Z',
  });

  it('with memory conversation, splits the earlier tasks at their user messages and takes the current one after them', () => {
    const earlier = [
      { role: 'user', content: 'one' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c', name: 'f', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'c', content: '{"error":"no"}' },
      { role: 'assistant', content: 'first' },
      { role: 'user', content: 'two' },
      { role: 'assistant', content: 'second' },
    ];
    const context = {
      memory: 'conversation',
      conversation: earlier,
      messages: [...earlier, { role: 'user', content: 'three' }, { role: 'assistant', content: null, toolCalls: [{ id: 'c', name: 'f', arguments: '{}' }] }],
      current: { seq: 4, task: 'three' },
      turn: 1,
      taskUsage: totals,
      usage: totals,
      results: [
        { seq: 1, task: 'one', response: 'first', usage: totals, turns: 2 },
        { seq: 3, task: 'two', response: 'second', usage: totals, turns: 1 }, // task 2 was skipped
      ],
      pendingApprovals: [{ callId: 'c', name: 'f', arguments: {} }],
    };
    const exchange = readExchange('a', context, [toolsRow(1, 'c', false)], kindOf)!;
    expect(exchange.tasks.map((task) => [task.seq, task.current, task.messages?.map((m) => m.role)])).toEqual([
      [1, false, ['user', 'assistant', 'tool']], // the final answers are shown as the tasks' responses
      [3, false, ['user']],
      [4, true, ['user', 'assistant']],
    ]);
    // The same call id in two tasks: each has its own key, and only the first one's result is recorded.
    expect(exchange.tasks[0]!.messages![2]).toEqual({ role: 'tool', callId: 'c', name: 'f', key: 'a:1:c', content: '{"error":"no"}', ok: false });
    expect(exchange.tasks[2]!.messages![1]).toMatchObject({ toolCalls: [{ id: 'c', key: 'a:4:c' }] });
    expect(exchange.pending).toEqual([{ callId: 'c', name: 'f', arguments: {}, key: 'a:4:c' }]);
  });

  it('with memory task, finds each completed task in its own final LLM call, and says when the log no longer has it', () => {
    const llmRow = (seq: number, task: string, response: string): ActionRecord => ({
      seq,
      action: 'callLlm',
      payload: { id: 'llm', input: { model: 'm', messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: task }] } },
      result: { ok: true, output: { content: response, toolCalls: [], usage: totals }, ms: 1 },
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    const context = {
      memory: 'task',
      conversation: [],
      messages: [],
      current: null,
      results: [
        { seq: 1, task: 'gone', response: 'r0', usage: totals, turns: 1 },
        { seq: 2, task: 'same', response: 'r', usage: totals, turns: 1 },
        { seq: 3, task: 'same', response: 'r', usage: totals, turns: 1 },
      ],
    };
    const exchange = readExchange('a', context, [llmRow(5, 'same', 'r'), llmRow(9, 'same', 'r')], kindOf)!;
    expect(exchange.tasks.map((task) => task.messages)).toEqual([
      undefined,
      [{ role: 'user', content: 'same' }],
      [{ role: 'user', content: 'same' }],
    ]);
    expect(exchange.tasks.map((task) => task.response)).toEqual(['r0', 'r', 'r']);
    expect(exchange.hiddenTasks).toBe(0);
    expect(readExchange('a', { count: 1 }, [], kindOf)).toBeUndefined(); // not a tool-calling agent's context
  });
});

function escapeHtml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#39;');
}

describe('dashboard login (--token)', () => {
  it('sends a browser without the cookie to the login page, and API callers still get a JSON 401', async () => {
    t = await testApp({ token: TOKEN });
    const page = await t.app.request('/ui/agents/a1?x=1', { headers: HTML });
    expect(page.status).toBe(302);
    expect(page.headers.get('location')).toBe(`/ui/login?next=${encodeURIComponent('/ui/agents/a1?x=1')}`);

    const api = await t.app.request('/');
    expect(api.status).toBe(401);
    expect((await readJson(api)).error.code).toBe('unauthorized');
    // An HTML request that is not a GET is not redirected.
    expect((await t.app.request('/agents', { method: 'POST', headers: { ...HTML, ...JSON_HEADERS }, body: '{}' })).status).toBe(401);

    expect((await t.app.request('/ui/app.js')).status).toBe(200); // the login page's script

    const form = await t.app.request('/ui/login?next=/ui/agents/a1');
    expect(form.status).toBe(200);
    expect(await form.text()).toContain('<input type="hidden" name="next" value="/ui/agents/a1"/>');
  });

  it('refuses a wrong token, and sets an HttpOnly SameSite=Strict cookie for the right one that the API accepts', async () => {
    t = await testApp({ token: TOKEN });
    const wrong = await login(t.app, 'nope');
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    expect(await wrong.text()).toContain('That token is not valid.');

    const right = await login(t.app, TOKEN, '/ui/agents/a1');
    expect(right.status).toBe(303);
    expect(right.headers.get('location')).toBe('/ui/agents/a1');
    const setCookie = right.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\//);
    const cookie = cookiePair(right);

    const home = await t.app.request('/', { headers: { ...HTML, cookie } });
    expect(home.status).toBe(200);
    const homeHtml = await home.text();
    expect(homeHtml).toContain('<table id="agents">');
    expect(homeHtml).toContain('<form method="post" action="/ui/logout">'); // logged in: the log-out button
    const spawned = await t.app.request('/agents', {
      method: 'POST',
      headers: { ...JSON_HEADERS, cookie },
      body: JSON.stringify({ machine: 'agent', id: 'a1' }),
    });
    expect(spawned.status).toBe(201);
    expect((await t.app.request('/agents/a1', { headers: { cookie } })).status).toBe(200);
    expect((await t.app.request('/ui/agents/a1', { headers: { cookie } })).status).toBe(200);

    // A wrong cookie is a 401; an explicit Authorization header wins over the cookie.
    expect((await t.app.request('/agents/a1', { headers: { cookie: 'durable_agents_token=nope' } })).status).toBe(401);
    expect((await t.app.request('/agents/a1', { headers: { cookie, authorization: 'Bearer nope' } })).status).toBe(401);
    expect((await t.app.request('/agents/a1', { headers: { cookie: 'durable_agents_token=nope', authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
  });

  it('only redirects back to a path on this server', async () => {
    t = await testApp({ token: TOKEN });
    for (const next of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
      expect((await login(t.app, TOKEN, next)).headers.get('location'), next).toBe('/');
    }
  });

  it('logs out by clearing the cookie', async () => {
    t = await testApp({ token: TOKEN });
    const res = await t.app.request('/ui/logout', { method: 'POST' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/ui/login');
    expect(res.headers.get('set-cookie')).toMatch(/^durable_agents_token=;.*Max-Age=0/);
  });

  it('has no login without a token', async () => {
    t = await testApp();
    const res = await t.app.request('/ui/login');
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/');
    const home = await t.app.request('/');
    expect(home.status).toBe(200);
    const html = await home.text();
    expect(html).toContain('<body data-page="agents">');
    expect(html).toContain('<table id="agents">');
    expect(html).not.toContain('action="/ui/logout"');
    expect(html).not.toContain('Log out');
  });
});

describe('dashboard building blocks', () => {
  it('lays out every state and targeted transition of the agent machine', async () => {
    const diagram = await layoutStatechart(agentMachine);
    expect(diagram.states.map((s) => s.id).sort()).toEqual(
      [
        'callingLLM', 'callingLLM.backingOff', 'callingLLM.requesting', 'done', 'failed', 'idle', 'persisted', 'sideEffect',
        'sideEffect.routing', 'sideEffect.awaitingApproval', 'sideEffect.runningTools', 'sideEffect.awaitingAgents', 'sideEffect.toolsBackoff', 'sideEffect.backingOff', 'sideEffect.requesting',
      ].sort(),
    );
    for (const s of diagram.states) {
      expect(s.width, s.id).toBeGreaterThan(0);
      expect(s.x + s.width, s.id).toBeLessThanOrEqual(diagram.width);
      expect(s.y + s.height, s.id).toBeLessThanOrEqual(diagram.height);
    }
    const edge = (from: string, to: string) => diagram.edges.find((e) => e.from === from && e.to === to);
    expect(edge('idle', 'callingLLM')?.label).toBe('always [hasQueuedTask]');
    expect(edge('callingLLM.requesting', 'persisted')?.label).toBe('llm done');
    expect(edge('failed', 'callingLLM')?.label).toBe('retry [failedAtLlm] / budget.raise [failedOnBudget]');
    expect(edge('callingLLM', 'failed')?.label).toBe('always [overBudget]');
    expect(edge('failed', 'idle')?.label).toBe('task.skip');
    expect(edge('callingLLM.backingOff', 'callingLLM.requesting')?.label).toBe('llmBackoff done / llmBackoff error');
    expect(edge('sideEffect.awaitingApproval', 'sideEffect.routing')?.label).toBe('tool.approve [isPendingCall] / tool.reject [isPendingCall]');
    expect(edge('sideEffect.runningTools', 'sideEffect.awaitingAgents')?.label).toBe('tools done');
    expect(edge('sideEffect.awaitingAgents', 'callingLLM')?.label).toBe('after agentCallsTimeout [turnsLeft] / always [callsAnsweredTurnsLeft]');
    expect(diagram.edges.filter((e) => e.initial).map((e) => e.to).sort()).toEqual(['callingLLM.requesting', 'idle', 'sideEffect.routing']);
    for (const e of diagram.edges) expect(e.points.length, e.id).toBeGreaterThanOrEqual(2);
    expect(diagram.internal).toEqual([{ state: '', events: ['task.add', 'agent.response [isAwaitedChild]', 'agent.done [isAwaitedChild]', 'agent.failed [isAwaitedChild]', 'budget.raise [hasBudget]'] }]);
  });

  it('turns state values into highlighted paths and labels', () => {
    expect(activeStatePaths('idle')).toEqual(['idle']);
    expect(activeStatePaths({ callingLLM: 'requesting' })).toEqual(['callingLLM', 'callingLLM.requesting']);
    expect(activeStatePaths({ a: { b: 'c' }, d: 'e' })).toEqual(['a', 'a.b', 'a.b.c', 'd', 'd.e']);
    expect(stateText({ callingLLM: 'requesting' })).toBe('callingLLM.requesting');
    expect(stateText(null)).toBe('—');
    expect(transitionLabel('xstate.error.actor.llm', { type: 'mayRetry' })).toBe('llm error [mayRetry]');
    expect(transitionLabel('xstate.after.1000.agent.x', undefined)).toBe('after 1000');
    expect(transitionLabel('runtime.committed', undefined)).toBe('committed');
  });

  it("reads an event's form fields from its zod schema", () => {
    expect(eventFields(agentEventSchemas['task.add'])).toEqual([{ name: 'task', kind: 'text', required: true }]);
    expect(eventFields(agentEventSchemas.retry)).toEqual([]);
    expect(eventFields(undefined)).toEqual([]);
  });
});

// The dashboard's routes without a browser (test/browser/ drives it in Chromium): the pages, the
// script, the login cookie and how they sit beside the JSON API.
import { afterEach, describe, expect, it } from 'vitest';
import { eventFields } from '../../src/http/dashboard/index.js';
import { stateText } from '../../src/core/state-value.js';
import { activeStatePaths, layoutStatechart, transitionLabel } from '../../src/http/dashboard/statechart.js';
import { agentEventSchemas } from '../../src/agents/reference/schemas.js';
import { agentMachine } from '../../src/agents/reference/machine.js';
import { isIdleWith, JSON_HEADERS, readJson, spawn, testApp, waitForView, type TestApp } from './harness.js';

const TOKEN = 'dash-token';
const HTML = { accept: 'text/html,application/xhtml+xml' };

let t: TestApp;
afterEach(async () => {
  await t?.close();
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
    expect(html).toContain('data-accepted="finish task.add"');
    expect(html).toMatch(/<form data-event="retry" hidden=""/);
    expect(html).toMatch(/<form data-event="task.add" class="with-fields"><button type="submit">task.add<\/button><input type="text" name="task" required=""/);
    expect(html).toContain('<button type="button" data-seq="4">');
    expect(html).toContain('<tr data-action="callLlm">');
    expect(html).toContain('Simulated answer (gpt-4o-mini) to: Summarize the report');
    expect(html).toContain('<tr data-action="runSideEffect">');
    expect(html).toContain('<code>a1:1</code>');
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
        'sideEffect.routing', 'sideEffect.awaitingApproval', 'sideEffect.runningTools', 'sideEffect.toolsBackoff', 'sideEffect.backingOff', 'sideEffect.requesting',
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
    expect(edge('failed', 'callingLLM')?.label).toBe('retry [failedAtLlm]');
    expect(edge('failed', 'idle')?.label).toBe('task.skip');
    expect(edge('callingLLM.backingOff', 'callingLLM.requesting')?.label).toBe('llmBackoff done / llmBackoff error');
    expect(edge('sideEffect.awaitingApproval', 'sideEffect.routing')?.label).toBe('tool.approve [isPendingCall] / tool.reject [isPendingCall]');
    expect(edge('sideEffect.runningTools', 'callingLLM')?.label).toBe('tools done [turnsLeft]');
    expect(diagram.edges.filter((e) => e.initial).map((e) => e.to).sort()).toEqual(['callingLLM.requesting', 'idle', 'sideEffect.routing']);
    for (const e of diagram.edges) expect(e.points.length, e.id).toBeGreaterThanOrEqual(2);
    expect(diagram.internal).toEqual([{ state: '', events: ['task.add'] }]);
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

// The agent page's parent and children (agents spawned by another one): the page component rendered
// on its own with views that have them, and the route giving it the agent's own view (the one that
// carries its children).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { jsx } from 'hono/jsx';
import { AgentPage, type AgentPageProps } from '../../src/http/dashboard/agent-page.js';
import { MAX_CHILDREN_SHOWN } from '../../src/http/dashboard/agent-family.js';
import { AgentsPage } from '../../src/http/dashboard/agents-page.js';
import type { AgentRecord } from '../../src/store/store.js';
import type { AgentView } from '../../src/runtime/views.js';
import { spawn, testApp, type TestApp } from './harness.js';

const AT = '2026-01-02T03:04:05.000Z';

function view(extra: Partial<AgentView> = {}): AgentView {
  return { id: 'root:1', machine: 'agent', status: 'active', state: 'idle', context: {}, progress: 0, createdAt: AT, updatedAt: AT, ...extra };
}

const record = (id: string): AgentRecord => ({
  id,
  machine: 'agent',
  machineVersion: '1',
  status: 'active',
  state: 'idle',
  progress: 0,
  lastSeq: 1,
  inboxPosition: 0,
  eventSeq: 0,
  error: null,
  createdAt: AT,
  updatedAt: AT,
  prunedBefore: 0,
  parent: null,
});

async function render(v: AgentView): Promise<string> {
  const props: AgentPageProps = {
    view: v,
    record: record(v.id),
    diagram: undefined,
    events: [],
    accepted: [],
    checkpoints: [],
    actions: [],
    kindOf: () => 'call',
    auth: false,
    now: Date.parse(AT),
  };
  return String(await jsx(AgentPage, props).toString());
}

/** The family section: from its opening to the next live section (they do not nest). */
function family(html: string): string {
  const start = html.indexOf('<div data-live="family">');
  expect(start).toBeGreaterThanOrEqual(0);
  const next = html.indexOf(' data-live=', start + 20);
  return html.slice(start, next < 0 ? undefined : next);
}

const links = (html: string) => [...html.matchAll(/<a href="([^"]*)" class="mono">([^<]*)<\/a>/g)].map((m) => [m[1], m[2]]);

describe("dashboard: an agent's parent and children", () => {
  it('links the parent and each child (oldest first) to their pages, ids URL-encoded in the links', async () => {
    const html = family(await render(view({ parent: 'root', children: ['root:1:call_0', 'root:1:call_1', 'helper.v2'] })));
    expect(html).toContain('<div class="family" data-parent="root" data-children="3">');
    expect(html).toMatch(/<div id="parent"><span class="muted">Parent:<\/span> <a href="\/ui\/agents\/root" class="mono">root<\/a><\/div>/);
    expect(html).toContain('Children (3, oldest first):');
    expect(html).toContain('<li data-child="root:1:call_0"><a href="/ui/agents/root%3A1%3Acall_0" class="mono">root:1:call_0</a></li>');
    expect(links(html)).toEqual([
      ['/ui/agents/root', 'root'],
      ['/ui/agents/root%3A1%3Acall_0', 'root:1:call_0'],
      ['/ui/agents/root%3A1%3Acall_1', 'root:1:call_1'],
      ['/ui/agents/helper.v2', 'helper.v2'],
    ]);
  });

  it('shows only what the view has: a parent alone, children alone, and an empty (but present) section for neither', async () => {
    const child = family(await render(view({ parent: 'root' })));
    expect(child).toContain('id="parent"');
    expect(child).not.toContain('Children');

    const parent = family(await render(view({ children: ['root:1:a'] })));
    expect(parent).toContain('<div class="family" data-parent="" data-children="1">');
    expect(parent).not.toContain('id="parent"');
    expect(links(parent)).toEqual([['/ui/agents/root%3A1%3Aa', 'root:1:a']]);

    expect(family(await render(view()))).toMatch(/^<div data-live="family"><\/div><div class="events"/);
    expect(family(await render(view({ children: [] })))).toMatch(/^<div data-live="family"><\/div><div class="events"/);
  });

  it('escapes the ids in text and attributes, and encodes them in links', async () => {
    const evil = '"><script>alert(1)</script>&';
    const html = await render(view({ parent: evil, children: [`${evil}x`] }));
    expect(html).not.toContain('<script>alert(1)');
    const section = family(html);
    expect(section).toContain('data-parent="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&amp;"');
    expect(section).toContain(`href="/ui/agents/${encodeURIComponent(evil)}"`);
    expect(section).toContain('>&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&amp;x</a>');
  });

  it(`lists the newest ${MAX_CHILDREN_SHOWN} of many children, and says how many there are`, async () => {
    const children = Array.from({ length: MAX_CHILDREN_SHOWN + 50 }, (_, i) => `root:1:c${i}`);
    const html = family(await render(view({ children })));
    expect(html).toContain(`data-children="${children.length}"`);
    expect(html).toContain(`Children (${children.length}, the newest ${MAX_CHILDREN_SHOWN} shown, oldest first):`);
    const shown = links(html).map(([, id]) => id);
    expect(shown).toEqual(children.slice(50));
  });
});

describe('dashboard: the agents list', () => {
  it("says whose child an agent is, linked to the parent's page, and nothing for an agent with none", async () => {
    const agents = [record('root'), { ...record('root:1'), parent: 'root' }, { ...record('<i>x</i>'), parent: '<b>p</b>&' }];
    const html = String(
      await jsx(AgentsPage, { agents, machines: ['agent'], filters: {}, nextCursor: null, counts: { active: 3 }, auth: false, now: Date.parse(AT) }).toString(),
    );
    const row = (id: string) => html.slice(html.indexOf(`<tr data-agent="${id}">`), html.indexOf('</tr>', html.indexOf(`<tr data-agent="${id}">`)));
    expect(row('root')).not.toContain('data-cell="parent"');
    expect(row('root:1')).toContain('<div class="small muted" data-cell="parent">child of <a href="/ui/agents/root" class="mono">root</a></div>');
    expect(row('&lt;i&gt;x&lt;/i&gt;')).toContain(
      `child of <a href="/ui/agents/${encodeURIComponent('<b>p</b>&')}" class="mono">&lt;b&gt;p&lt;/b&gt;&amp;</a>`,
    );
    expect(html).not.toContain('<b>p</b>');
  });
});

describe("dashboard: the agent page's view", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await t?.close();
    t = undefined;
  });

  it("renders from the agent's own view (runtime.view), the one that carries parent and children", async () => {
    t = await testApp();
    await spawn(t.app, 'p1', {}, 'toggle');
    await spawn(t.app, 'p1.c1', {}, 'toggle');
    const runtime = t.runtime;
    const own = runtime.view.bind(runtime);
    vi.spyOn(runtime, 'view').mockImplementation(async (id, row) => {
      const v = await own(id, row);
      return id === 'p1' ? { ...v, children: ['p1.c1'] } : id === 'p1.c1' ? { ...v, parent: 'p1' } : v;
    });

    const parent = family(await (await t.app.request('/ui/agents/p1')).text());
    expect(links(parent)).toEqual([['/ui/agents/p1.c1', 'p1.c1']]);
    const child = family(await (await t.app.request('/ui/agents/p1.c1')).text());
    expect(links(child)).toEqual([['/ui/agents/p1', 'p1']]);
    // With the row the page read already: the view is built from it, not read again.
    expect(runtime.view).toHaveBeenCalledWith('p1', expect.objectContaining({ id: 'p1', machine: 'toggle' }));

    const page = await t.app.request('/ui/agents/nope');
    expect(page.status).toBe(404);
  });
});

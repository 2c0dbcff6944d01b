/**
 * The dashboard: server-rendered pages (hono/jsx) at `/` and under `/ui/`, plus one small script.
 * Everything it changes goes through the JSON API from the browser; the pages only read.
 *
 * @example
 * app.use(bearerAuth(token, DASHBOARD_AUTH));           // accepts the login cookie too
 * app.route('/', createDashboard({ runtime, token }));
 */
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, setCookie } from 'hono/cookie';
import type { AnyStateMachine } from 'xstate';
import { z } from 'zod';
import { InvalidInputError, NotFoundError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { AGENT_STATUSES, type ActionRecord, type AgentRecord, type AgentStatus, type CheckpointSummary } from '../../store/store.js';
import type { AgentView } from '../../runtime/views.js';
import { actorOf, eventSchema, type RegisteredMachine } from '../../runtime/registered-machine.js';
import type { Runtime } from '../../runtime/runtime.js';
import { tokenChecker, type BearerAuthOptions } from '../middleware/auth.js';
import type { AppEnv } from '../env.js';
import { AgentPage, MAX_ACTIONS_SHOWN, MAX_CHECKPOINTS_SHOWN } from './agent-page.js';
import type { EventField } from './event-forms.js';
import { AgentsPage, type AgentFilters } from './agents-page.js';
import { CLIENT_SCRIPT } from './client.js';
import { CLIENT_SCRIPT_PATH, Layout, LOGIN_PATH, LOGOUT_PATH } from './layout.js';
import { LoginPage } from './login-page.js';
import { stateText } from '../../core/state-value.js';
import { layoutStatechart, type ChartDiagram } from './statechart.js';
import { Statechart } from './statechart-svg.js';

export const SESSION_COOKIE = 'durable_agents_token';

/** What `bearerAuth` needs to let a browser in with the login cookie. */
export const DASHBOARD_AUTH: BearerAuthOptions = {
  cookie: SESSION_COOKIE,
  // The script holds nothing secret, and the login page loads it too.
  publicPaths: [LOGIN_PATH, LOGOUT_PATH, CLIENT_SCRIPT_PATH],
  loginPath: LOGIN_PATH,
};

/** Rows per page of the agents list; a text filter scans at most this many pages per request. */
const PAGE_SIZE = 200;
const MAX_SCANNED_PAGES = 25;

export interface DashboardOptions {
  runtime: Runtime;
  /** When set, the login page asks for it and sets it as an HttpOnly cookie. */
  token?: string | undefined;
  /** The MCP servers an agent's input may name (`"mcp": [...]`). */
  mcpServers?: readonly string[];
}

export function createDashboard({ runtime, token, mcpServers = [] }: DashboardOptions) {
  const app = new Hono<AppEnv>();
  const auth = Boolean(token);
  const readOnly = runtime.readOnly;
  const diagrams = new WeakMap<AnyStateMachine, Promise<ChartDiagram | undefined>>();
  const diagramFor = (machine: RegisteredMachine, log: Logger) => {
    let diagram = diagrams.get(machine.machine);
    if (!diagram) {
      diagram = layoutStatechart(machine.machine).catch((err: unknown) => {
        log.error({ err, machine: machine.name }, 'could not lay out the statechart; the page shows none');
        return undefined;
      });
      diagrams.set(machine.machine, diagram);
    }
    return diagram;
  };
  // Machines are registered once: their event forms and the filter's names are computed once, not per render.
  const eventForms = new Map(
    [...runtime.machines.values()].map((m) => [m.name, m.eventTypes.map((type) => ({ type, fields: eventFields(eventSchema(m, type)) }))]),
  );
  const machineNames = [...runtime.machines.keys()].sort();

  app.get(CLIENT_SCRIPT_PATH, (c) =>
    c.body(CLIENT_SCRIPT, 200, { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': 'no-cache' }),
  );

  app.get('/', async (c) => {
    const filters = readFilters(c.req.query());
    const [{ agents, nextCursor }, { agentsByStatus }] = await Promise.all([listAgents(runtime, filters), runtime.stats()]);
    return c.html(
      <AgentsPage
        agents={agents}
        machines={machineNames}
        filters={filters}
        nextCursor={nextCursor}
        counts={agentsByStatus}
        auth={auth}
        readOnly={readOnly}
        mcpServers={mcpServers}
        now={Date.now()}
      />,
    );
  });

  app.get('/ui/agents/:id', async (c) => {
    const id = c.req.param('id');
    // The row is read for what a view does not carry (its error, its checkpoint count), and handed to
    // `runtime.view`, which adds the agent's children to the view built from it.
    let record: AgentRecord;
    let view: AgentView, checkpoints: CheckpointSummary[], actions: ActionRecord[];
    try {
      record = await runtime.agentOrThrow(id);
      [view, checkpoints, actions] = await Promise.all([
        runtime.view(id, record),
        // Only what the page shows: a long-lived agent's whole history would be read at every update.
        runtime.checkpoints(id, { newest: MAX_CHECKPOINTS_SHOWN }),
        runtime.actions(id, { newest: MAX_ACTIONS_SHOWN }),
      ]);
    } catch (err) {
      if (err instanceof NotFoundError) return c.html(<NotFound what={err.message} auth={auth} />, 404);
      throw err;
    }
    const accepted = runtime.acceptedEvents(view);
    const machine = runtime.machines.get(view.machine);
    const diagram = machine ? await diagramFor(machine, c.get('log')) : undefined;
    const events = eventForms.get(view.machine) ?? [];
    return c.html(
      <AgentPage
        view={view}
        record={record}
        diagram={diagram}
        events={events}
        accepted={accepted}
        checkpoints={checkpoints}
        actions={actions}
        kindOf={(src) => (machine ? actorOf(machine, src).kind : 'call')}
        auth={auth}
        readOnly={readOnly}
        now={Date.now()}
      />,
    );
  });

  // The statechart alone at its natural size, the agent's state highlighted: the page's "Open full size".
  app.get('/ui/agents/:id/chart.svg', async (c) => {
    let view: AgentView;
    try {
      view = await runtime.view(c.req.param('id'));
    } catch (err) {
      if (err instanceof NotFoundError) return c.html(<NotFound what={err.message} auth={auth} />, 404);
      throw err;
    }
    const machine = runtime.machines.get(view.machine);
    const diagram = machine ? await diagramFor(machine, c.get('log')) : undefined;
    if (!diagram) return c.html(<NotFound what={`The machine "${view.machine}" has no diagram in this process.`} auth={auth} />, 404);
    const svg = `<?xml version="1.0" encoding="utf-8"?>\n${String(<Statechart diagram={diagram} state={view.state} standalone />)}`;
    return c.body(svg, 200, { 'Content-Type': 'image/svg+xml; charset=utf-8', 'Cache-Control': 'no-store' });
  });

  app.get(LOGIN_PATH, (c) => {
    if (!token) return c.redirect('/', 302);
    return c.html(<LoginPage next={safeNext(c.req.query('next'))} failed={false} />);
  });

  const matches = token ? tokenChecker(token) : () => false;
  app.post(LOGIN_PATH, bodyLimit({ maxSize: 16 * 1024 }), async (c) => {
    if (!token) return c.redirect('/', 303);
    const form = await c.req.parseBody();
    const next = safeNext(typeof form.next === 'string' ? form.next : undefined);
    const given = typeof form.token === 'string' ? form.token.trim() : '';
    if (!matches(given)) {
      c.get('log').warn('dashboard login refused: wrong token');
      return c.html(<LoginPage next={next} failed={true} />, 401);
    }
    setCookie(c, SESSION_COOKIE, given, {
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
      secure: new URL(c.req.url).protocol === 'https:',
    });
    return c.redirect(next, 303);
  });

  app.post(LOGOUT_PATH, (c) => {
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    return c.redirect(token ? LOGIN_PATH : '/', 303);
  });

  return app;
}

const NotFound = ({ what, auth }: { what: string; auth: boolean }) => (
  <Layout title="Not found" page="not-found" auth={auth}>
    <div class="card">
      <h1>Not found</h1>
      <p>{what}</p>
      <p>
        <a href="/">← All agents</a>
      </p>
    </div>
  </Layout>
);

function readFilters(query: Record<string, string>): AgentFilters {
  const text = (value: string | undefined, max: number) => (value?.trim() ? value.trim().slice(0, max) : undefined);
  const status = AGENT_STATUSES.includes(query.status as AgentStatus) ? (query.status as AgentStatus) : undefined;
  return { machine: text(query.machine, 200), status, q: text(query.q, 200), cursor: text(query.cursor, 200) };
}

/**
 * One page of agents, oldest first (the store's order). With a text filter, pages are scanned until
 * a page's worth matched (at most MAX_SCANNED_PAGES per request; "next page" goes on from there).
 */
async function listAgents(runtime: Runtime, filters: AgentFilters): Promise<{ agents: AgentRecord[]; nextCursor: string | null }> {
  const needle = filters.q?.toLowerCase();
  const matches = (a: AgentRecord) =>
    !needle || [a.id, a.machine, a.status, stateText(a.state)].some((field) => field.toLowerCase().includes(needle));
  const agents: AgentRecord[] = [];
  let cursor = filters.cursor;
  let nextCursor: string | null = null;
  for (let scanned = 0; scanned < MAX_SCANNED_PAGES; scanned++) {
    let page;
    try {
      page = await runtime.agents({
        limit: PAGE_SIZE,
        ...(filters.machine ? { machine: filters.machine } : {}),
        ...(filters.status ? { status: filters.status } : {}),
        ...(cursor ? { cursor } : {}),
      });
    } catch (err) {
      if (err instanceof InvalidInputError && cursor) return listAgents(runtime, { ...filters, cursor: undefined }); // a stale cursor
      throw err;
    }
    agents.push(...page.items.filter(matches));
    nextCursor = page.nextCursor;
    if (!nextCursor || agents.length >= PAGE_SIZE) break;
    cursor = nextCursor;
  }
  return { agents, nextCursor };
}

/** The fields an event form asks for, read from the machine's zod schema for that event type. */
export function eventFields(schema: z.ZodType | undefined): EventField[] {
  if (!(schema instanceof z.ZodObject)) return [];
  return Object.entries(schema.shape as Record<string, z.ZodType>)
    .filter(([name]) => name !== 'type')
    .map(([name, field]) => {
      let inner: z.ZodType = field;
      while (inner instanceof z.ZodOptional || inner instanceof z.ZodNullable || inner instanceof z.ZodDefault) {
        inner = inner.unwrap() as z.ZodType;
      }
      return { name, kind: inner instanceof z.ZodString ? 'text' : 'json', required: !field.safeParse(undefined).success };
    });
}

/** Only a path on this server: never `//host` or an absolute URL (an open redirect). */
function safeNext(next: string | undefined): string {
  return next && next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\') ? next : '/';
}


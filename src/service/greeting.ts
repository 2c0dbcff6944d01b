// What `serve` says once it listens: where to point a browser and a client, which LLM answers,
// where the data lives, a first request to try. One JSON log line for machines; readable lines for a person at a terminal.
import path from 'node:path';
import { inspect } from 'node:util';
import type { Logger } from '../core/logger.js';

export interface Greeting {
  /** The server's base URL: the API's routes and the dashboard (at `/`) are under it. */
  url: string;
  llm: { kind: 'openai' | 'simulated'; description: string; model: string };
  /** `readOnly`: serves what is stored, runs nothing, refuses writes (`--read-only`). */
  store: { kind: 'sqlite' | 'postgres' | 'memory'; location: string; synchronous?: 'normal' | 'full'; leaseMs?: number; readOnly?: boolean };
  auth: boolean;
}

/** Writes a greeting somewhere: `logGreeting` (JSON) or a terminal's `printGreeting`. */
export type Announce = (greeting: Greeting) => void;

export function dashboardUrl(url: string): string {
  return `${url}/`;
}

/** Where the data lives, as a person would look for it: an absolute file path, or the database. */
export function dataLocation(store: Greeting['store']): string {
  if (store.readOnly) return `${where(store)}, READ-ONLY: serves what is stored, runs no agent, answers every write 503 read_only`;
  if (store.kind === 'sqlite') {
    const file = path.resolve(store.location);
    return `SQLite file ${file} (${store.synchronous === 'normal' ? 'survives process crashes, not power loss' : 'fsynced at every commit'})`;
  }
  if (store.kind === 'postgres') return `Postgres ${store.location} (lease ${store.leaseMs} ms: another process takes over a dead one's agents)`;
  return `memory only (${store.location}): gone when the process ends`;
}

function where(store: Greeting['store']): string {
  return store.kind === 'sqlite' ? `SQLite file ${path.resolve(store.location)}` : `${store.kind} ${store.location}`;
}

/**
 * The greeting as one JSON log line. Its message starts with "durable-agents listening" and it
 * carries `url`: scripts (and the end-to-end tests) wait for that line to learn the port.
 */
export function logGreeting(log: Logger): Announce {
  return (g) =>
    log.info(
      {
        url: g.url, dashboard: dashboardUrl(g.url), store: g.store.kind, location: g.store.location, ...(g.store.readOnly ? { readOnly: true } : {}),
        llm: g.llm.description, model: g.llm.model, auth: g.auth ? 'bearer token' : 'none',
      },
      `durable-agents listening on ${g.url} (store: ${g.store.kind} ${g.store.location}${g.store.readOnly ? ', READ-ONLY: runs nothing, refuses writes' : ''}; LLM: ${g.llm.description})`,
    );
}

/** The greeting as lines for a terminal, the URLs first, a first curl last; `colors` makes the simulated LLM stand out more. */
export function greetingLines(g: Greeting, { colors = false }: { colors?: boolean } = {}): string[] {
  const style = (format: Style | Style[], text: string) => (colors ? paint([format].flat(), text) : text);
  const row = (label: string, value: string) => `  ${style('dim', label.padEnd(9))}  ${value}`;
  const more = (value: string) => row('', value);
  const llm =
    g.llm.kind === 'simulated'
      ? [
          row('LLM', style(['bold', 'yellow'], '*** SIMULATED: answers are made up locally, no model is called ***')),
          more('Set OPENAI_API_KEY or OPENAI_BASE_URL (or --llm-api-key / --llm-base-url) to call a real one.'),
        ]
      : [row('LLM', `${g.llm.model} through the ${g.llm.description}`)];
  return [
    '',
    style('bold', 'durable-agents is ready'),
    row('Dashboard', style(['bold', 'cyan'], dashboardUrl(g.url))),
    row('API', `${style('cyan', g.url)}  (OpenAPI document: ${g.url}/openapi.json)`),
    ...llm,
    row('Data', dataLocation(g.store)),
    row('Auth', g.auth ? 'a bearer token is required (--token)' : 'none: anyone who can reach this address may use the API'),
    // A read-only server would refuse the first curl's spawn.
    ...(g.store.readOnly ? [] : firstCurl(g)).map((line, i) => (i === 0 ? row('Try', line) : more(line))),
    '',
    style('dim', 'Ctrl-C stops the server; committed work stays committed.'),
    '',
  ];
}

/**
 * A first request to paste in another terminal: spawn an agent with one task (the README's first
 * curl, without an id so that it works at every start: the answer names the agent, and the
 * dashboard shows it). With auth, a placeholder for the token.
 */
export function firstCurl(g: Greeting): string[] {
  const auth = g.auth ? ` -H 'authorization: Bearer <token>'` : '';
  return [
    `curl -s ${g.url}/agents -H 'content-type: application/json'${auth} \\`,
    `  -d '{"machine":"agent","input":{"tasks":["Summarize the report"]}}'`,
  ];
}

type Style = 'bold' | 'dim' | 'yellow' | 'cyan';

/** ANSI codes from node's own table (util.styleText would drop them when stdout is not a terminal, on newer Nodes). */
function paint(styles: Style[], text: string): string {
  return styles.reduceRight((inner, style) => {
    const [open, close] = inspect.colors[style] ?? [];
    return open === undefined ? inner : `\u001b[${open}m${inner}\u001b[${close}m`;
  }, text);
}

/** The terminal's greeting: readable lines on `write`, which must keep the order of the log lines around it. */
export function printGreeting(write: (text: string) => void, options: { colors?: boolean } = {}): Announce {
  return (g) => write(`${greetingLines(g, options).join('\n')}\n`);
}

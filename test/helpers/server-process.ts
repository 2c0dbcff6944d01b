/**
 * Real `durable-agents serve` processes for end-to-end tests: started with `--port 0` (the port is
 * read from the "listening" log line), driven with fetch, killed with real signals.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { vi } from 'vitest';
import type { AgentView } from '../../src/runtime/views.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const TOKEN = 'e2e-token';
export const AUTH = { authorization: `Bearer ${TOKEN}` };

/** The contract's env vars: cleared so the flags given are the whole configuration. */
const CONTRACT_ENV = [
  'PORT', 'HOST', 'DURABLE_AGENTS_DB', 'DATABASE_URL', 'OPENAI_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_MODEL',
  'LLM_TIMEOUT_MS', 'MAX_ATTEMPTS', 'RETRY_BASE_MS', 'DURABLE_AGENTS_TOKEN', 'LEASE_MS',
];

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  output: string[];
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<ServerProcess>();

/** SIGKILLs every server still running (for afterEach). */
export async function killAllServers(): Promise<void> {
  for (const server of running) {
    server.child.kill('SIGKILL');
    await server.exit;
  }
  running.clear();
}

export interface ServeOptions {
  /** `['--db', file]` or `['--database-url', url]`. */
  store: string[];
  llmUrl: string;
  /** Further flags (a later `--port` overrides the 0). */
  extra?: string[];
  /** A command that runs node, e.g. setpriv's (test/helpers/permissions.ts). */
  prefix?: string[];
}

/** The command `startServer` runs, and its environment: for a test that watches a start fail. */
export function serveCommand(options: ServeOptions): { command: string[]; env: NodeJS.ProcessEnv } {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', LOG_FORMAT: 'json' };
  for (const name of CONTRACT_ENV) delete env[name];
  const args = ['--conditions=development', '--import', 'tsx', 'src/service/cli.ts', 'serve', '--port', '0', ...options.store];
  args.push('--llm-base-url', options.llmUrl, '--llm-api-key', 'test', '--token', TOKEN, '--retry-base-ms', '20', ...(options.extra ?? []));
  return { command: [...(options.prefix ?? []), process.execPath, ...args], env };
}

/**
 * Starts `serve --port 0` with the token, the given LLM base URL and short retries; `store` is
 * `['--db', file]` or `['--database-url', url]`, `extra` any further flags.
 */
export async function startServer(options: ServeOptions): Promise<ServerProcess> {
  const { command: [bin, ...args], env } = serveCommand(options);
  const child = spawn(bin!, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })), // once the pipes are drained: output read after it is whole
  );
  const server: ServerProcess = { url: '', child, output, exit };
  running.add(server);
  void exit.then(() => running.delete(server));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  server.url = await new Promise<string>((resolve, reject) => {
    let pending = '';
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output.join('')}`)), 30_000);
    void exit.then(({ code, signal }) => reject(new Error(`server exited (${code ?? signal}) before listening:\n${output.join('')}`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      let newline;
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        output.push(line);
        const record = parseLine(line);
        if (typeof record?.url === 'string' && String(record.msg).startsWith('durable-agents listening')) {
          clearTimeout(timer);
          resolve(record.url);
        }
      }
    });
  });
  return server;
}

export function parseLine(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** One authenticated JSON request; the body parsed. */
export async function api(server: ServerProcess, method: string, url: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(server.url + url, {
    method,
    headers: { ...AUTH, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined };
}

/** Polls the agent's view until `done` holds; returns that view. */
export async function waitForAgent(server: ServerProcess, id: string, done: (v: AgentView) => boolean, timeout = 30_000): Promise<AgentView> {
  let view: AgentView | undefined;
  await vi.waitFor(
    async () => {
      view = (await api(server, 'GET', `/agents/${id}`)).body as AgentView;
      if (!done(view)) throw new Error(`${id}: ${JSON.stringify(view.state)} progress ${view.progress}`);
    },
    { timeout, interval: 25 },
  );
  return view!;
}

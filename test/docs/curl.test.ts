// The curl sessions of the docs, run through the app as `npm start` composes it (the agent machine,
// the simulated LLM, a SQLite file; `app.request`, no port). Each page's commands run in order, as a
// reader would type them, each once the agents have finished what the previous one started.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { BUILTIN_TOOLS } from '../../src/agents/reference/builtin-tools.js';
import { agentDefinition, createRuntime, createSimulatedLlm, type Runtime } from '../../src/index.js';
import { createServer } from '../../src/http/app.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';
import { tempDir } from '../helpers/temp.js';
import { curlRequests, shellWords, type CurlRequest } from './curl.js';
import { markdownFiles } from './markdown.js';

const sessions = markdownFiles()
  .map((file) => ({ file, requests: curlRequests(file) }))
  .filter((s) => s.requests.length > 0);

/** States that wait for an event: idle, failed, and a tool call waiting for a person's decision. */
const RESTING = ['idle', 'failed', JSON.stringify({ sideEffect: 'awaitingApproval' })];

/**
 * Agents rest when every event accepted is consumed (the store's rows say) and the view, which shows
 * a checkpoint once it is acknowledged (a row may be read before its fsync), is a state that waits.
 */
async function settled(store: SqliteStore, runtime: Runtime): Promise<void> {
  await vi.waitFor(
    async () => {
      const busy: string[] = [];
      for (const agent of (await store.listAgents({ limit: 1000 })).items) {
        if (agent.status !== 'active') continue;
        const view = await runtime.view(agent.id);
        if (agent.inboxPosition < agent.eventSeq || view.status === 'active' && !RESTING.includes(typeof view.state === 'string' ? view.state : JSON.stringify(view.state))) {
          busy.push(`${agent.id} in ${JSON.stringify(view.state)}`);
        }
      }
      if (busy.length > 0) throw new Error(`still working: ${busy.join(', ')}`);
    },
    { timeout: 5_000, interval: 10 },
  );
}

async function send(app: ReturnType<typeof createServer>, request: CurlRequest): Promise<{ status: number; body: unknown }> {
  const res = await app.request(request.path, {
    method: request.method,
    headers: request.headers,
    ...(request.body === undefined ? {} : { body: request.body }),
  });
  if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
    // A stream of an active agent does not end: read its first event, then hang up.
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    return { status: res.status, body: first };
  }
  const text = await res.text();
  return { status: res.status, body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
}

/**
 * Where `actual` does not contain the part of the body a page shows: every key shown, with its value
 * (recursively); a list shown is the start of the list.
 */
function mismatches(actual: unknown, shown: unknown, at = '$'): string[] {
  if (Array.isArray(shown)) {
    if (!Array.isArray(actual)) return [`${at} is not a list`];
    if (actual.length < shown.length) return [`${at} has ${actual.length} items, the page shows ${shown.length}`];
    return shown.flatMap((item, i) => mismatches(actual[i], item, `${at}[${i}]`));
  }
  if (shown !== null && typeof shown === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return [`${at} is not an object`];
    return Object.entries(shown).flatMap(([key, value]) =>
      key in actual ? mismatches((actual as Record<string, unknown>)[key], value, `${at}.${key}`) : [`${at}.${key} is missing`],
    );
  }
  return Object.is(actual, shown) ? [] : [`${at} is ${JSON.stringify(actual)}, the page shows ${JSON.stringify(shown)}`];
}

describe('the curl sessions of the docs', () => {
  it('are found where the docs have them', () => {
    expect(sessions.map((s) => s.file)).toEqual(expect.arrayContaining(['README.md', 'docs/http-api.md']));
  });

  for (const { file, requests } of sessions) {
    it(`${file}: ${requests.length} requests answer as the page says`, async () => {
      const dir = tempDir('da-docs-curl-');
      // At NORMAL a commit is acknowledged as soon as it is written: at FULL a row can be read before
      // its fsync, ahead of the view, and an agent between two transitions would look settled.
      const store = await openSqliteStore(path.join(dir, 'agents.db'), { synchronous: 'normal' });
      // As `serve` runs it with the simulated LLM: with the built-in tools.
      const runtime = await createRuntime({ store, machines: [agentDefinition({ llm: createSimulatedLlm(), tools: BUILTIN_TOOLS })] });
      const app = createServer({ runtime });
      try {
        for (const request of requests) {
          const { status, body } = await send(app, request);
          const expected = request.expected;
          if (expected) expect(status, `${request.at} ${request.method} ${request.path}: ${JSON.stringify(body)}`).toBe(expected.status);
          else expect(status, `${request.at} ${request.method} ${request.path}: ${JSON.stringify(body)}`).toBeLessThan(300);
          if (expected?.body !== undefined) expect(mismatches(body, expected.body), `${request.at}: ${JSON.stringify(body)}`).toEqual([]);
          await settled(store, runtime);
        }
      } finally {
        await runtime.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});

describe('reading curl commands', () => {
  it('compares a body with the part a page shows: keys shown, lists by their start', () => {
    expect(mismatches({ items: [{ seq: 1, state: 'idle' }, { seq: 2 }], nextCursor: null }, { items: [{ seq: 1 }] })).toEqual([]);
    expect(mismatches({ items: [{ seq: 2 }] }, { items: [{ seq: 1 }] })).toEqual(['$.items[0].seq is 2, the page shows 1']);
    expect(mismatches({ items: [] }, { items: [{ seq: 1 }] })).toEqual(['$.items has 0 items, the page shows 1']);
    expect(mismatches({ ok: true }, { ok: true, seq: 1 })).toEqual(['$.seq is missing']);
  });

  it('resolves quotes and stops at pipes, redirections and comments', () => {
    expect(shellWords(`curl -s localhost:3000/a -H 'content-type: application/json' -d '{"a":"b c"}' | grep x`)).toEqual([
      'curl',
      '-s',
      'localhost:3000/a',
      '-H',
      'content-type: application/json',
      '-d',
      '{"a":"b c"}',
    ]);
    expect(shellWords(`curl -s "localhost:3000/b?x=\\"1\\"" > out.txt   # note`)).toEqual(['curl', '-s', 'localhost:3000/b?x="1"']);
  });
});

// Streamed tokens across a crash: a real `serve` process SIGKILLed while an answer streams to a
// real EventSource client, a new process on the same SQLite file and port; the client reconnects by
// itself (Last-Event-ID) and is told that the text it had is void (`restart`) before the new answer.
import { EventSource } from 'eventsource';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { freePort, tempDbFile } from '../helpers/temp.js';
import { AUTH, killAllServers, startServer, waitForAgent } from '../helpers/server-process.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';

let fake: FakeOpenAI | undefined;
let source: EventSource | undefined;

afterEach(async () => {
  source?.close();
  await killAllServers();
  await fake?.close();
  fake = source = undefined;
});

const ANSWER = 'One two three four five six seven eight nine ten.';

describe('a stream across a SIGKILL of the server', () => {
  it('restart, then the answer the new process got, whole: the text after the restart is the committed answer', { timeout: 90_000 }, async () => {
    fake = await startFakeOpenAI({ answer: () => ANSWER });
    const hold = fake.holdAfter(3); // the first asking: three words, then the process dies
    const db = tempDbFile();
    const port = await freePort();
    const start = () => startServer({ store: ['--db', db], llmUrl: fake!.url, extra: ['--port', String(port)] });
    const first = await start();
    const spawned = await fetch(`${first.url}/agents`, {
      method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ machine: 'agent', id: 'k1', input: { tasks: ['count'] } }),
    });
    expect(spawned.status).toBe(201);

    const events: { event: string; id: string; data: any }[] = [];
    const reconnects: string[] = [];
    // The client comes back only once the new process has committed the answer: the harder case,
    // where the call it was following is over before it asks (the new process keeps that call's text).
    let answered!: () => void;
    const answerCommitted = new Promise<void>((resolve) => (answered = resolve));
    source = new EventSource(`${first.url}/agents/k1/stream`, {
      fetch: async (url, init) => {
        const lastId = (init?.headers as Record<string, string> | undefined)?.['Last-Event-ID'];
        if (lastId) {
          await answerCommitted;
          reconnects.push(lastId);
        }
        return fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), ...AUTH } });
      },
    });
    for (const type of ['snapshot', 'token', 'restart']) {
      source.addEventListener(type, (e) => events.push({ event: type, id: e.lastEventId, data: JSON.parse(e.data) }));
    }
    await hold.reached;
    await vi.waitFor(() => expect(events.filter((e) => e.event === 'token')).toHaveLength(3), { timeout: 10_000 });

    first.child.kill('SIGKILL');
    await first.exit;
    const second = await start(); // recovers k1 in callingLLM: its answer was never committed, so it is asked again
    const done = await waitForAgent(second, 'k1', (v) => (v.context as { results: unknown[] }).results.length === 1);
    expect((done.context as { results: { response: string }[] }).results[0]!.response).toBe(ANSWER);
    answered();

    await vi.waitFor(() => expect(events.some((e) => e.event === 'snapshot' && e.data.progress === 1)).toBe(true), { timeout: 15_000 });
    // It came back with the id of the last token it had.
    expect(reconnects[0]).toBe(events.filter((e) => e.event === 'token')[2]!.id);
    const ofCall = events.filter((e) => e.event !== 'snapshot');
    expect(ofCall.slice(0, 3).map((e) => e.data.delta).join('')).toBe('One two three ');
    expect(ofCall[3]).toMatchObject({ event: 'restart', data: { seq: 1, turn: 0 } });
    const after = ofCall.slice(4);
    expect(after.every((e) => e.event === 'token')).toBe(true);
    expect(after.map((e) => e.data.index)).toEqual(after.map((_, i) => i));
    expect(after.map((e) => e.data.delta).join('')).toBe(ANSWER);
    expect(fake.calls.filter((c) => c.stream)).toHaveLength(2);
  });
});

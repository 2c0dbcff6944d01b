import { afterEach, describe, expect, it, vi } from 'vitest';
import OpenAI, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  AuthenticationError,
  InternalServerError,
  RateLimitError,
} from 'openai';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai.js';

let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function setup(opts?: Parameters<typeof startFakeOpenAI>[0], clientOpts: { apiKey?: string; timeout?: number } = {}) {
  fake = await startFakeOpenAI(opts);
  // maxRetries: 0 so every assertion sees exactly one HTTP attempt per create().
  const client = new OpenAI({ apiKey: clientOpts.apiKey ?? 'test', baseURL: fake.url, maxRetries: 0, timeout: clientOpts.timeout ?? 2000 });
  const ask = (content: string) =>
    client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content }] });
  return { fake, client, ask };
}

// Captures the rejection so assertions can inspect the real error object.
async function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => expect.fail('expected the call to fail'),
    (err: unknown) => err,
  );
}

describe('fake OpenAI server', () => {
  it('answers like Chat Completions and records the call', async () => {
    const { fake, ask } = await setup();
    const res = await ask('hello');
    expect(res.object).toBe('chat.completion');
    expect(res.model).toBe('gpt-4o-mini');
    expect(res.choices[0]?.message).toEqual({ role: 'assistant', content: 'answer: hello' });
    expect(res.choices[0]?.finish_reason).toBe('stop');
    expect(res.usage?.total_tokens).toBeGreaterThan(0);
    expect(fake.calls).toHaveLength(1);
    expect(fake.calls[0]).toMatchObject({
      model: 'gpt-4o-mini',
      userContent: 'hello',
      authorization: 'Bearer test',
      outcome: 'ok',
      messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello' }],
    });
    expect(fake.callsFor('hello')).toHaveLength(1);
    expect(fake.callsFor('other')).toHaveLength(0);
  });

  it('uses a custom answer function', async () => {
    const { ask } = await setup({ answer: (u) => u.toUpperCase() });
    expect((await ask('shout')).choices[0]?.message.content).toBe('SHOUT');
  });

  it('maps 500 to InternalServerError (an APIError) with the OpenAI error body', async () => {
    const { fake, ask } = await setup();
    fake.enqueueFaults({ kind: 'status', status: 500 });
    const err = await failure(ask('boom'));
    expect(err).toBeInstanceOf(APIError);
    expect(err).toBeInstanceOf(InternalServerError);
    expect(err).toMatchObject({ status: 500, type: 'server_error', requestID: 'req_fake_0' });
    expect(fake.calls[0]?.outcome).toBe('fault');
  });

  it('exposes Retry-After on a 429 through a Headers object', async () => {
    const { fake, ask } = await setup();
    fake.enqueueFaults({ kind: 'status', status: 429, retryAfter: '7' });
    const err = await failure(ask('slow down'));
    expect(err).toBeInstanceOf(RateLimitError);
    const rl = err as RateLimitError;
    expect(rl.status).toBe(429);
    expect(rl.code).toBe('rate_limit_exceeded');
    expect(rl.headers).toBeInstanceOf(Headers);
    expect(rl.headers.get('retry-after')).toBe('7');
  });

  it('rejects a wrong API key with 401 when requireApiKey is set', async () => {
    const { fake, ask } = await setup({ requireApiKey: 'sk-right' }, { apiKey: 'sk-wrong' });
    fake.enqueueFaults({ kind: 'status', status: 500 });
    const err = await failure(ask('let me in'));
    expect(err).toBeInstanceOf(AuthenticationError);
    expect(err).toMatchObject({ status: 401, code: 'invalid_api_key' });
    expect(fake.calls[0]).toMatchObject({ authorization: 'Bearer sk-wrong', outcome: 'fault' });
    // The auth failure must not have eaten the queued fault.
    const ok = new OpenAI({ apiKey: 'sk-right', baseURL: fake.url, maxRetries: 0 });
    await expect(ok.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 500 });
  });

  it('hang: the client times out and the call is recorded as aborted', async () => {
    const { fake, ask } = await setup(undefined, { timeout: 300 });
    fake.enqueueFaults({ kind: 'hang' });
    const err = await failure(ask('are you there'));
    // The SDK raises this only when the request was aborted (here only its own 300 ms timer aborts)
    // or the connection reported a timeout: the hung call ended by the client's timeout, whatever
    // the time it took on a loaded machine.
    expect(err).toBeInstanceOf(APIConnectionTimeoutError);
    expect(fake.calls).toHaveLength(1); // one attempt, held by the fake until the client gave up
    // Surprising but true: a timeout is also an APIError, just with no status or headers.
    expect(err).toBeInstanceOf(APIError);
    expect(err).toMatchObject({ status: undefined, headers: undefined, message: 'Request timed out.' });
    await vi.waitFor(() => expect(fake.calls[0]?.outcome).toBe('aborted'), { timeout: 1000 });
  });

  it('malformed: 200 whose message has no content', async () => {
    const { fake, ask } = await setup();
    fake.enqueueFaults({ kind: 'malformed' });
    const res = await ask('empty');
    // The client does not validate the body, so the consumer must.
    expect(res.choices[0]?.message.content ?? null).toBeNull();
    expect(fake.calls[0]?.outcome).toBe('fault');
  });

  it('delay and latency postpone a normal answer', async () => {
    // The client waits longer than the test may run: only the fake decides when a call is answered.
    const { fake, ask } = await setup({ latencyMs: 50 }, { timeout: 60_000 });
    fake.enqueueFaults({ kind: 'delay', ms: 150 });
    const t = Date.now();
    expect((await ask('a')).choices[0]?.message.content).toBe('answer: a');
    // A lower bound only: the injected 50 + 150 ms is the behaviour under test, and load can only add to it.
    expect(Date.now() - t).toBeGreaterThanOrEqual(190);

    // A latency function is asked per call: 'quick' gets none, and is answered while a call the
    // function holds back for longer than the test may run is still waiting.
    fake.setLatency((call) => (call.userContent === 'quick' ? 0 : 10 * 60_000));
    let slowSettled = false;
    const slow = failure(ask('slow')).finally(() => (slowSettled = true));
    await vi.waitFor(() => expect(fake.callsFor('slow')).toHaveLength(1));
    expect((await ask('quick')).choices[0]?.message.content).toBe('answer: quick');
    expect(slowSettled).toBe(false);
    expect(fake.calls.map((c) => c.outcome)).toEqual(['ok', 'ok', 'ok']);
    await fake.close(); // drops the held call
    expect(await slow).toBeInstanceOf(APIConnectionError);
    expect(fake.calls.map((c) => [c.userContent, c.outcome])).toEqual([
      ['a', 'ok'],
      ['slow', 'aborted'],
      ['quick', 'ok'],
    ]);
  });

  it('consumes queued faults in order, then answers normally', async () => {
    const { fake, ask } = await setup();
    fake.enqueueFaults({ kind: 'status', status: 503 }, { kind: 'status', status: 400 });
    await expect(ask('1')).rejects.toMatchObject({ status: 503 });
    await expect(ask('2')).rejects.toMatchObject({ status: 400 });
    await expect(ask('3')).resolves.toMatchObject({ choices: [{ message: { content: 'answer: 3' } }] });
    expect(fake.calls.map((c) => c.outcome)).toEqual(['fault', 'fault', 'ok']);
  });

  it('fault policy wins over the queue and sees the call and its index', async () => {
    const { fake, ask } = await setup();
    fake.enqueueFaults({ kind: 'status', status: 400 });
    const seen: [string, number][] = [];
    fake.setFaultPolicy((call, index) => {
      seen.push([call.userContent, index]);
      return call.userContent === 'poison' ? { kind: 'status', status: 502 } : undefined;
    });
    await expect(ask('poison')).rejects.toMatchObject({ status: 502 });
    // Policy returned undefined, so the queue applies.
    await expect(ask('fine')).rejects.toMatchObject({ status: 400 });
    fake.setFaultPolicy(undefined);
    await expect(ask('fine')).resolves.toBeDefined();
    expect(seen).toEqual([['poison', 0], ['fine', 1]]);
  });

  it('sends a custom error body verbatim', async () => {
    const { fake, ask } = await setup();
    fake.enqueueFaults({ kind: 'status', status: 429, body: { error: { message: 'quota', type: 'insufficient_quota', code: 'insufficient_quota' } } });
    await expect(ask('x')).rejects.toMatchObject({ status: 429, code: 'insufficient_quota', message: '429 quota' });
  });

  it('answers 404 JSON for unknown routes', async () => {
    const { fake } = await setup();
    const res = await fetch(`${fake.url}/models`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    expect(fake.calls).toHaveLength(0);
  });

  it('close() resolves promptly with a hung request and the client sees a connection error', async () => {
    // Longer than any stall, shorter than the test timeout: were close() to wait for the hung request
    // rather than drop it, the client would give up first, with the timeout error refused below.
    const { fake, ask } = await setup(undefined, { timeout: 20_000 });
    fake.enqueueFaults({ kind: 'hang' });
    let settled = false;
    const pending = failure(ask('stuck')).finally(() => (settled = true));
    await vi.waitFor(() => expect(fake.calls).toHaveLength(1));
    expect(settled).toBe(false); // close() below finds the request hung
    await fake.close();
    const err = await pending;
    expect(err).toBeInstanceOf(APIConnectionError);
    expect(err).not.toBeInstanceOf(APIConnectionTimeoutError);
    expect(fake.calls[0]?.outcome).toBe('aborted');
  });
});

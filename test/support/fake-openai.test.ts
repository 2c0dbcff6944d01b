// The fake OpenAI server through the real `openai` client: faults, latency, scripted tool calls and
// usage (long: the fake stands in for a whole API, and each behaviour a test relies on is checked here).
import { afterEach, describe, expect, it, vi } from 'vitest';
import OpenAI, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  AuthenticationError,
  BadRequestError,
  InternalServerError,
  RateLimitError,
} from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { messageText, startFakeOpenAI, usageFor, type FakeOpenAI } from './fake-openai.js';

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

const TOOLS: ChatCompletionTool[] = [
  { type: 'function', function: { name: 'search', description: 'Search the web', parameters: { type: 'object', properties: { q: { type: 'string' } } } } },
  { type: 'function', function: { name: 'fetch_page', parameters: { type: 'object' } } },
];

describe('fake OpenAI server: usage, tool calls, scripted replies', () => {
  it('sends usage by the documented rule: one token per 4 characters, rounded up', async () => {
    const { fake, ask } = await setup();
    const res = await ask('hello');
    // Prompt: 'be brief' + 'hello' = 13 characters → 4; answer 'answer: hello' = 13 characters → 4.
    expect(res.usage).toEqual({ prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 });
    const sent = [{ content: 'be brief' }, { content: 'hello' }];
    expect(usageFor(sent, 'answer: hello')).toEqual(res.usage);
    expect(fake.calls[0]?.response).toEqual({ message: { role: 'assistant', content: 'answer: hello' }, finishReason: 'stop', usage: res.usage });
    expect(usageFor([{ content: '' }], '')).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
    expect(usageFor([{ content: 'abcde' }], 'abcd')).toEqual({ prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 });
  });

  it('answers scripted tool calls the way the real API does, and records the tools offered', async () => {
    const { fake, client } = await setup();
    fake.script({ toolCalls: [{ name: 'search', arguments: { q: 'durable agents' } }, { id: 'mine', name: 'fetch_page', arguments: '{"url": "http://x' }] });
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'research' }];
    const res = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, tools: TOOLS, tool_choice: 'auto' });

    const message = res.choices[0]?.message;
    expect(res.choices[0]?.finish_reason).toBe('tool_calls');
    expect(message).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'search', arguments: '{"q":"durable agents"}' } },
        // A string goes out as is: here, JSON cut short, as models sometimes produce.
        { id: 'mine', type: 'function', function: { name: 'fetch_page', arguments: '{"url": "http://x' } },
      ],
    });
    // The tool calls' names and arguments count as the answer's text.
    expect(messageText(message!)).toBe('search{"q":"durable agents"}fetch_page{"url": "http://x');
    expect(res.usage).toEqual(usageFor(messages, messageText(message!)));
    expect(res.usage).toEqual({ prompt_tokens: 2, completion_tokens: 14, total_tokens: 16 });
    expect(fake.calls[0]).toMatchObject({ tools: TOOLS, toolChoice: 'auto', userContent: 'research', outcome: 'ok' });
    expect(fake.scripted).toBe(0);
  });

  it('records the whole exchange as sent, and keys every turn of a task by its first user message', async () => {
    const { fake, client } = await setup();
    fake.script({ toolCalls: [{ name: 'search', arguments: { q: 'a' } }, { name: 'search', arguments: { q: 'b' } }] }, { content: 'both found' });
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: 'use tools' },
      { role: 'user', content: 'find a and b' },
    ];
    const first = await client.chat.completions.create({ model: 'm', messages, tools: TOOLS });
    const calls = first.choices[0]?.message.tool_calls ?? [];
    expect(calls.map((c) => c.id)).toEqual(['call_1', 'call_2']);
    const exchange: ChatCompletionMessageParam[] = [
      ...messages,
      { role: 'assistant', content: null, tool_calls: calls },
      { role: 'tool', tool_call_id: 'call_1', content: '{"hits":1}' },
      { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: 'no hits' }] },
      { role: 'user', content: 'and be quick' },
    ];
    const second = await client.chat.completions.create({ model: 'm', messages: exchange, tools: TOOLS });
    expect(second.choices[0]).toMatchObject({ message: { role: 'assistant', content: 'both found' }, finish_reason: 'stop' });
    expect(second.usage).toEqual(usageFor(exchange, 'both found'));

    const recorded = fake.calls[1]!;
    expect(recorded.rawMessages).toEqual(JSON.parse(JSON.stringify(exchange)));
    expect(recorded.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', 'use tools'],
      ['user', 'find a and b'],
      ['assistant', ''],
      ['tool', '{"hits":1}'],
      ['tool', 'no hits'],
      ['user', 'and be quick'],
    ]);
    expect(recorded.userContent).toBe('find a and b');
    expect(fake.callsFor('find a and b')).toHaveLength(2);
    // The script is spent: the default answer again, with new tool-call ids never reused.
    fake.script({ toolCalls: [{ name: 'search', arguments: {} }] });
    const third = await client.chat.completions.create({ model: 'm', messages, tools: TOOLS });
    expect(third.choices[0]?.message.tool_calls?.[0]?.id).toBe('call_3');
    expect((await client.chat.completions.create({ model: 'm', messages })).choices[0]?.message.content).toBe('answer: find a and b');
  });

  it('a reply policy answers from the messages so far, and falls through to the script when it returns undefined', async () => {
    const { fake, client } = await setup();
    fake.setReplyPolicy((call) => {
      if (call.userContent === 'scripted') return undefined;
      const last = call.rawMessages.at(-1);
      return last?.role === 'tool' ? { content: `the tool said ${String(last.content)}` } : { toolCalls: [{ name: 'search', arguments: { q: call.userContent } }] };
    });
    fake.script({ content: 'from the script' });

    // A minimal tool loop: answer every tool call, until the model answers with text.
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'loop' }];
    for (let turn = 0; turn < 5; turn++) {
      const message = (await client.chat.completions.create({ model: 'm', messages, tools: TOOLS })).choices[0]!.message;
      messages.push(message);
      if (!message.tool_calls) break;
      for (const tc of message.tool_calls) messages.push({ role: 'tool', tool_call_id: tc.id, content: 'found it' });
    }
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages.at(-1)).toEqual({ role: 'assistant', content: 'the tool said found it' });
    expect(fake.scripted).toBe(1); // the policy answered both turns

    const res = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'scripted' }] });
    expect(res.choices[0]?.message.content).toBe('from the script');
    fake.setReplyPolicy(undefined);
    expect((await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })).choices[0]?.message.content).toBe('answer: x');
  });

  it('scripted usage replaces the fields it names; null sends no usage at all', async () => {
    const { fake, ask } = await setup();
    fake.script(
      { content: 'abc', usage: { prompt_tokens: 100 } },
      { content: 'abc', usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 7 } },
      { content: 'abc', usage: null },
      { usage: { completion_tokens: 9 } },
    );
    expect((await ask('q')).usage).toEqual({ prompt_tokens: 100, completion_tokens: 1, total_tokens: 101 });
    expect((await ask('q')).usage).toEqual({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 7 });
    const bare = await ask('q');
    expect(bare.choices[0]?.message.content).toBe('abc');
    expect(bare.usage).toBeUndefined();
    // No content and no tool calls: the default answer, with the scripted usage.
    const defaulted = await ask('q');
    expect(defaulted.choices[0]?.message.content).toBe('answer: q');
    expect(defaulted.usage).toEqual({ prompt_tokens: 3, completion_tokens: 9, total_tokens: 12 });
    expect(fake.calls[2]?.response?.usage).toBeUndefined();
  });

  it('faults and refusals are decided before a scripted reply, which waits for the next answered call', async () => {
    const { fake, client, ask } = await setup();
    fake.script({ content: 'first scripted' }, { content: 'second scripted' });
    fake.enqueueFaults({ kind: 'status', status: 503 }, { kind: 'hang' }, { kind: 'malformed' }, { kind: 'delay', ms: 10 });
    await expect(ask('a')).rejects.toMatchObject({ status: 503 });
    await expect(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'b' }] }, { timeout: 200 })).rejects.toBeInstanceOf(
      APIConnectionTimeoutError,
    );
    expect((await ask('c')).choices[0]?.message.content ?? null).toBeNull();
    await expect(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'd' }], tools: [] })).rejects.toBeInstanceOf(BadRequestError);
    expect(fake.scripted).toBe(2);
    expect((await ask('e')).choices[0]?.message.content).toBe('first scripted'); // the delay fault: a slow success
    expect((await ask('f')).choices[0]?.message.content).toBe('second scripted');
  });

  it('refuses with a 400, as the real API does, what a tool loop may get wrong', async () => {
    const { fake, client } = await setup();
    const refusal = async (body: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming>) => {
      const err = await failure(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], ...body }));
      expect(err).toBeInstanceOf(BadRequestError);
      const { message, param, code } = err as BadRequestError;
      return { message, param, code };
    };
    const assistant = { role: 'assistant' as const, content: null, tool_calls: [{ id: 'c1', type: 'function' as const, function: { name: 'search', arguments: '{}' } }] };

    expect(await refusal({ tools: [] })).toMatchObject({ param: 'tools', code: 'empty_array', message: expect.stringContaining("Invalid 'tools': empty array") });
    expect(await refusal({ tool_choice: 'auto' })).toMatchObject({ param: 'tool_choice' });
    expect(await refusal({ tools: [{ type: 'function', function: { name: 'has space' } }] })).toMatchObject({ param: 'tools[0].function.name' });
    expect(await refusal({ messages: [{ role: 'user', content: 'x' }, { role: 'tool', tool_call_id: 'c1', content: 'orphan' }] })).toEqual({
      message: "400 Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
      param: 'messages.[1].role',
      code: null,
    });
    expect(await refusal({ messages: [{ role: 'user', content: 'x' }, assistant] })).toMatchObject({
      message: expect.stringContaining('The following tool_call_ids did not have response messages: c1'),
      param: 'messages.[1].role',
    });
    // An answered call answered twice, and a tool message with no id.
    const twice = [{ role: 'user' as const, content: 'x' }, assistant, ...[1, 2].map(() => ({ role: 'tool' as const, tool_call_id: 'c1', content: 'r' }))];
    expect(await refusal({ messages: twice })).toMatchObject({ param: 'messages.[3].role' });
    expect(await refusal({ messages: [{ role: 'user', content: 'x' }, assistant, { role: 'tool', content: 'r' } as ChatCompletionMessageParam] })).toMatchObject({
      param: 'messages.[2].tool_call_id',
    });
    expect(fake.calls.map((c) => c.outcome)).toEqual(Array(7).fill('fault'));

    const answered = await client.chat.completions.create({
      model: 'm',
      tools: TOOLS,
      messages: [{ role: 'user', content: 'x' }, assistant, { role: 'tool', tool_call_id: 'c1', content: 'r' }],
    });
    expect(answered.choices[0]?.message.content).toBe('answer: x');
  });

  it('strict: false lets through what the real API would refuse', async () => {
    const { client } = await setup({ strict: false });
    const res = await client.chat.completions.create({ model: 'm', tools: [], messages: [{ role: 'tool', tool_call_id: 'nobody', content: 'r' }] });
    expect(res.choices[0]?.message.content).toBe('answer: ');
  });
});

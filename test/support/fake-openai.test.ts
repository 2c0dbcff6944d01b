// The fake OpenAI server through the real `openai` client: faults, latency, scripted tool calls,
// usage and streaming (long: the fake stands in for a whole API, and each behaviour a test relies
// on is checked here).
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
import type { ChatCompletionChunk, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { messageText, startFakeOpenAI, usageFor, wordDeltas, type FakeOpenAI } from './fake-openai.js';

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

type ChunkStream = AsyncIterable<ChatCompletionChunk>;

interface Collected {
  chunks: ChatCompletionChunk[];
  /** The content deltas in order (the role chunk's empty content left out). */
  deltas: string[];
  content: string;
  /** The tool calls as a client accumulates them, by index. */
  toolCalls: { id: string; type: string; function: { name: string; arguments: string } }[];
  finishReason: string | null | undefined;
  usage: ChatCompletionChunk['usage'];
}

// What a consumer of the chunks ends with; `onChunk` sees each as it arrives.
async function collect(stream: ChunkStream, onChunk: (chunk: ChatCompletionChunk) => void = () => undefined): Promise<Collected> {
  const out: Collected = { chunks: [], deltas: [], content: '', toolCalls: [], finishReason: undefined, usage: undefined };
  for await (const chunk of stream) {
    out.chunks.push(chunk);
    onChunk(chunk);
    if (chunk.usage) out.usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.finish_reason) out.finishReason = choice.finish_reason;
    const { role, content, tool_calls } = choice.delta;
    if (typeof content === 'string' && !role) {
      out.deltas.push(content);
      out.content += content;
    }
    for (const tc of tool_calls ?? []) {
      const acc = (out.toolCalls[tc.index] ??= { id: '', type: '', function: { name: '', arguments: '' } });
      if (tc.id) acc.id = tc.id;
      if (tc.type) acc.type = tc.type;
      if (tc.function?.name) acc.function.name = tc.function.name;
      acc.function.arguments += tc.function?.arguments ?? '';
    }
  }
  return out;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('fake OpenAI server: streaming', () => {
  async function streaming(opts?: Parameters<typeof startFakeOpenAI>[0], clientOpts: { timeout?: number } = {}) {
    const s = await setup(opts, { timeout: clientOpts.timeout ?? 10_000 });
    const messages: ChatCompletionMessageParam[] = [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello' }];
    const stream = (extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsStreaming> = {}) =>
      s.client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true, stream_options: { include_usage: true }, ...extra });
    return { ...s, messages, stream };
  }

  it('streams the text in word deltas, as Server-Sent Events shaped like the real API', async () => {
    const { fake, stream, ask } = await streaming();
    fake.script({ content: 'Hello world, friend' });
    const got = await collect(await stream());
    expect(got.deltas).toEqual(['Hello ', 'world, ', 'friend']);
    expect(got.content).toBe(fake.calls[0]?.response?.message.content);
    expect(fake.calls[0]).toMatchObject({ stream: true, deltasSent: 3, outcome: 'ok' });

    // One id, object, created and model throughout; the role chunk first, then the deltas, the finish, the usage.
    const [first] = got.chunks;
    expect(first?.id).toMatch(/^chatcmpl-fake-\d+$/);
    for (const chunk of got.chunks) {
      expect(chunk).toMatchObject({ id: first?.id, object: 'chat.completion.chunk', created: first?.created, model: 'gpt-4o-mini' });
    }
    expect(got.chunks.map((c) => c.choices)).toEqual([
      [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
      ...['Hello ', 'world, ', 'friend'].map((content) => [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }]),
      [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }],
      [],
    ]);
    // With include_usage every chunk but the last carries `usage: null`, as the real API documents.
    expect(got.chunks.map((c) => c.usage ?? null).slice(0, -1)).toEqual(Array(5).fill(null));

    // The default answer is cut the same way, and the recorded call says it was not streamed.
    expect((await collect(await stream())).deltas).toEqual(['answer: ', 'hello']);
    await ask('plain');
    expect(fake.calls.map((c) => [c.stream, c.deltasSent])).toEqual([
      [true, 3],
      [true, 2],
      [false, 0],
    ]);

    // On the wire: an event stream, one `data:` event per chunk, ended by [DONE].
    const raw = await fetch(`${fake.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'a b' }], stream: true }),
    });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toBe('text/event-stream');
    const events = (await raw.text()).split('\n\n');
    expect(events.at(-1)).toBe('');
    expect(events.at(-2)).toBe('data: [DONE]');
    expect(events.slice(0, -2).every((e) => e.startsWith('data: {'))).toBe(true);
    expect(events).toHaveLength(1 + 3 + 1 + 2); // role; 'answer: ', 'a ', 'b'; finish (no usage asked); [DONE], ''
  });

  it('word deltas keep every character: whitespace runs, a leading space, an empty text', async () => {
    expect(wordDeltas('Hello world, friend')).toEqual(['Hello ', 'world, ', 'friend']);
    expect(wordDeltas('  two\n\nlines  end ')).toEqual(['  ', 'two\n\n', 'lines  ', 'end ']);
    expect(wordDeltas('')).toEqual([]);
    expect(wordDeltas('   ')).toEqual(['   ']);
  });

  it('sends scripted deltas exactly, their join being the content of a streamed or plain answer', async () => {
    const { fake, stream, ask } = await streaming();
    const deltas = ['Hel', 'lo', '', ' wor', 'ld!'];
    fake.script({ deltas }, { deltas });
    const got = await collect(await stream());
    expect(got.deltas).toEqual(deltas);
    expect(got.content).toBe('Hello world!');
    expect(fake.calls[0]?.response?.message).toEqual({ role: 'assistant', content: 'Hello world!' });
    expect((await ask('x')).choices[0]?.message.content).toBe('Hello world!');
  });

  it('streams tool calls as the real API does, accumulating to the non-streamed answer', async () => {
    const { fake, client, stream, messages } = await streaming();
    const one = { toolCalls: [{ id: 'call_a', name: 'search', arguments: { q: 'durable agents' } }] };
    const two = {
      toolCalls: [
        { id: 'call_b', name: 'search', arguments: { q: 'a much longer query, to be cut in several fragments' } },
        { id: 'call_c', name: 'fetch_page', arguments: '' },
      ],
    };
    fake.script(one, one, two, two);
    for (const reply of [one, two]) {
      const plain = (await client.chat.completions.create({ model: 'gpt-4o-mini', messages, tools: TOOLS })).choices[0]!;
      const got = await collect(await stream({ tools: TOOLS }));
      expect(got.toolCalls).toEqual(plain.message.tool_calls);
      expect(got.toolCalls).toHaveLength(reply.toolCalls.length);
      expect(got.finishReason).toBe('tool_calls');
      expect(got.deltas).toEqual([]);
    }

    // The shapes, for the two calls: the role with null content, for each call a chunk naming it
    // with empty arguments, then its arguments in fragments of at most 8 characters.
    const got = fake.calls[3]!;
    expect(got.response?.message.tool_calls?.map((c) => c.id)).toEqual(['call_b', 'call_c']);
    fake.script(two);
    const chunks = (await collect(await stream({ tools: TOOLS }))).chunks;
    const deltas = chunks.map((c) => c.choices[0]?.delta);
    expect(deltas[0]).toEqual({ role: 'assistant', content: null });
    expect(deltas[1]).toEqual({ tool_calls: [{ index: 0, id: 'call_b', type: 'function', function: { name: 'search', arguments: '' } }] });
    const firstArgs = deltas.slice(2).filter((d) => d?.tool_calls?.[0]?.index === 0);
    expect(firstArgs.length).toBeGreaterThan(2);
    for (const d of firstArgs) {
      expect(Object.keys(d?.tool_calls?.[0] ?? {})).toEqual(['index', 'function']);
      expect(d?.tool_calls?.[0]?.function?.arguments?.length).toBeLessThanOrEqual(8);
    }
    // An empty arguments string has no fragment: the naming chunk is all of the second call.
    expect(deltas.at(-3)).toEqual({ tool_calls: [{ index: 1, id: 'call_c', type: 'function', function: { name: 'fetch_page', arguments: '' } }] });
    expect(chunks.at(-2)?.choices[0]).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' });
  });

  it('sends the non-streamed usage in a last chunk only with include_usage, and none for a reply with usage: null', async () => {
    const { fake, stream, ask } = await streaming();
    const plain = await ask('hello');
    const got = await collect(await stream());
    expect(got.usage).toEqual(plain.usage);
    expect(got.chunks.at(-1)).toMatchObject({ choices: [], usage: plain.usage });

    const without = await collect(await stream({ stream_options: { include_usage: false } }));
    expect(without.chunks.every((c) => !('usage' in c))).toBe(true);
    expect(without.chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
    expect((await collect(await stream({ stream_options: undefined }))).usage).toBeUndefined();

    fake.script({ content: 'no usage', usage: null });
    const none = await collect(await stream());
    expect(none.content).toBe('no usage');
    expect(none.usage).toBeUndefined();
    expect(none.chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
  });

  it('chunkIntervalMs and setChunkInterval space the deltas', async () => {
    const { fake, stream } = await streaming({ chunkIntervalMs: 40 });
    fake.script({ content: 'one two three four five' }, { content: 'one two three' });
    let t = Date.now();
    expect((await collect(await stream())).deltas).toHaveLength(5);
    // Lower bounds only: four pauses of 40 ms between five deltas; load can only add to them.
    expect(Date.now() - t).toBeGreaterThanOrEqual(150);
    fake.setChunkInterval(100);
    t = Date.now();
    expect((await collect(await stream())).deltas).toHaveLength(3);
    expect(Date.now() - t).toBeGreaterThanOrEqual(190);
  });

  it('cut: the iteration throws the raw fetch error (not an APIError) after the deltas sent, and the answer is kept for the retry', async () => {
    const { fake, stream, client } = await streaming();
    fake.script({ content: 'one two three four' });
    fake.enqueueFaults({ kind: 'cut', afterDeltas: 2 });
    const received: string[] = [];
    const s = await stream(); // the 200 and the role chunk came: create() itself resolves
    const err = await failure(collect(s, (c) => void (c.choices[0]?.delta.content && received.push(c.choices[0].delta.content))));
    // The SDK does not wrap an error in the middle of a stream: undici's body error comes through as is.
    expect(err).toBeInstanceOf(TypeError);
    expect(err).not.toBeInstanceOf(APIError);
    expect(err).toMatchObject({ message: 'terminated', cause: { code: 'UND_ERR_SOCKET' } });
    expect(received).toEqual(['one ', 'two ']);
    expect(fake.calls[0]).toMatchObject({ stream: true, deltasSent: 2, outcome: 'fault', response: { message: { content: 'one two three four' } } });

    // The cut took nothing from the script: the retry streams the same answer whole.
    expect(fake.scripted).toBe(1);
    expect((await collect(await stream())).content).toBe('one two three four');

    // A cut past the last delta still loses the finish and [DONE]; a plain request is cut before any byte.
    fake.enqueueFaults({ kind: 'cut', afterDeltas: 99 }, { kind: 'cut', afterDeltas: 0 });
    await expect(collect(await stream())).rejects.toThrow('terminated');
    await expect(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(APIConnectionError);
    expect(fake.calls.map((c) => [c.outcome, c.deltasSent])).toEqual([
      ['fault', 2],
      ['ok', 4],
      ['fault', 2],
      ['fault', 0],
    ]);
  });

  it('holdAfter(3) pauses a stream after exactly 3 deltas until release()', async () => {
    const { fake, stream } = await streaming();
    fake.script({ content: 'a b c d e f' });
    fake.enqueueFaults({ kind: 'status', status: 500 }); // a fault does not take the hold
    await expect(stream()).rejects.toBeInstanceOf(InternalServerError);
    const hold = fake.holdAfter(3);
    const received: string[] = [];
    const done = collect(await stream(), (c) => void (typeof c.choices[0]?.delta.content === 'string' && !c.choices[0].delta.role && received.push(c.choices[0].delta.content)));
    const call = await hold.reached;
    expect(call).toBe(fake.calls[1]);
    expect(call.deltasSent).toBe(3);
    await vi.waitFor(() => expect(received).toHaveLength(3));
    await sleep(100); // held: nothing more comes, however long we wait
    expect(received).toEqual(['a ', 'b ', 'c ']);
    hold.release();
    const got = await done;
    expect(got.content).toBe('a b c d e f');
    expect(got.finishReason).toBe('stop');
    expect(received).toHaveLength(6);
    expect(fake.calls[1]).toMatchObject({ outcome: 'ok', deltasSent: 6 });

    // The next streamed call is not held: a hold is for one call.
    expect((await collect(await stream())).deltas).toEqual(['answer: ', 'hello']);
  });

  it('close() ends a held stream, and fails a hold no call reached', async () => {
    const { fake, stream } = await streaming();
    const hold = fake.holdAfter(1);
    const unused = fake.holdAfter(1);
    const s = await stream();
    const done = failure(collect(s));
    await hold.reached;
    await fake.close();
    expect(await done).toBeInstanceOf(TypeError);
    expect(fake.calls[0]).toMatchObject({ outcome: 'aborted', deltasSent: 1 });
    await expect(unused.reached).rejects.toThrow('closed before the hold was used');
    hold.release(); // too late: a no-op
  });

  it('faults on a streamed request: status before the stream, malformed, delay and hang', async () => {
    const { fake, stream } = await streaming(undefined, { timeout: 300 });
    fake.enqueueFaults({ kind: 'status', status: 429, retryAfter: '3' }, { kind: 'malformed' }, { kind: 'delay', ms: 120 }, { kind: 'hang' });
    const err = await failure(stream());
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });

    const malformed = await collect(await stream());
    expect(malformed.chunks[0]?.choices[0]?.delta).toEqual({ role: 'assistant' });
    expect(malformed.content).toBe('');
    expect(malformed.toolCalls).toEqual([]);
    expect(malformed.finishReason).toBe('stop');

    const t = Date.now();
    expect((await collect(await stream())).content).toBe('answer: hello');
    expect(Date.now() - t).toBeGreaterThanOrEqual(110);

    expect(await failure(stream())).toBeInstanceOf(APIConnectionTimeoutError);
    expect(fake.calls.map((c) => c.outcome.replace('aborted', 'fault'))).toEqual(['fault', 'fault', 'ok', 'fault']);
  });

  it('streams: false answers a streaming request with the plain JSON completion, which the SDK stream reads as nothing', async () => {
    const { fake, stream } = await streaming({ streams: false });
    fake.script({ content: 'Hello world' });
    const raw = await fetch(`${fake.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } }),
    });
    expect(raw.headers.get('content-type')).toBe('application/json');
    const body = (await raw.json()) as OpenAI.Chat.ChatCompletion;
    expect(body).toMatchObject({ object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello world' }, finish_reason: 'stop' }] });
    expect(body.usage).toEqual(usageFor([{ content: 'hi' }], 'Hello world'));
    expect(fake.calls[0]).toMatchObject({ stream: true, deltasSent: 0, outcome: 'ok' });

    // The trap a client falls into: the SDK goes by the request, reads the body as events, finds none.
    const hold = fake.holdAfter(1);
    const got = await collect(await stream());
    expect(got.chunks).toEqual([]);
    expect(fake.calls[1]).toMatchObject({ stream: true, deltasSent: 0, outcome: 'ok' });
    // No stream, so no hold was taken: the next streaming server would still have it.
    hold.release();
  });

  it('completionContentType sets (or, null, leaves out) the content-type of a plain completion', async () => {
    for (const [given, got] of [['text/plain', 'text/plain'], [null, null]] as const) {
      const fake = await startFakeOpenAI({ streams: false, completionContentType: given });
      try {
        const raw = await fetch(`${fake.url}/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true }) });
        expect(raw.headers.get('content-type')).toBe(got);
        expect(((await raw.json()) as OpenAI.Chat.ChatCompletion).choices[0]?.message.content).toBe('answer: x');
      } finally {
        await fake.close();
      }
    }
  });

  it('noChoices: a 200 with the usage and no choices (missing, or empty), plain or streamed', async () => {
    const { fake, client, stream, messages: streamMessages } = await streaming();
    fake.enqueueFaults({ kind: 'noChoices' }, { kind: 'noChoices', choices: 'empty' }, { kind: 'noChoices' }, { kind: 'noChoices', choices: 'empty' });
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'x' }];
    const missing = await client.chat.completions.create({ model: 'm', messages });
    expect(missing).toMatchObject({ object: 'chat.completion', usage: usageFor(messages, '') });
    expect('choices' in missing).toBe(false);
    expect((await client.chat.completions.create({ model: 'm', messages })).choices).toEqual([]);

    // Read chunk by chunk (collect() expects choices): one chunk with the usage, then [DONE].
    const chunksOf = async () => {
      const chunks: ChatCompletionChunk[] = [];
      for await (const chunk of await stream()) chunks.push(chunk);
      return chunks;
    };
    const streamedMissing = await chunksOf();
    expect(streamedMissing).toHaveLength(1);
    expect('choices' in streamedMissing[0]!).toBe(false);
    expect(streamedMissing[0]).toMatchObject({ object: 'chat.completion.chunk', usage: usageFor(streamMessages, '') });
    expect((await chunksOf()).map((c) => c.choices)).toEqual([[]]);
    expect(fake.calls.map((c) => c.outcome)).toEqual(['fault', 'fault', 'fault', 'fault']);
  });

  it('refuses stream_options without stream: true in strict mode, as the real API does', async () => {
    const { client, fake } = await setup();
    const body = { model: 'm', messages: [{ role: 'user' as const, content: 'x' }], stream_options: { include_usage: true } };
    const err = await failure(client.chat.completions.create(body));
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err).toMatchObject({ status: 400, param: 'stream_options', message: "400 The 'stream_options' parameter is only allowed when 'stream' is enabled." });
    expect(fake.calls[0]).toMatchObject({ outcome: 'fault', stream: false });
    await fake.close();

    const lenient = await setup({ strict: false });
    expect((await lenient.client.chat.completions.create(body)).choices[0]?.message.content).toBe('answer: x');
  });

  it('the SDK stream helper ends with the message and usage of the non-streamed call', async () => {
    const { fake, client, messages } = await streaming();
    const replies = [{ content: 'Hello world, friend' }, { content: 'checking', toolCalls: [{ id: 'call_x', name: 'search', arguments: { q: 'x' } }] }];
    for (const reply of replies) {
      fake.script(reply, reply);
      const plain = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, tools: TOOLS });
      const final = await client.chat.completions
        .stream({ model: 'gpt-4o-mini', messages, tools: TOOLS, stream_options: { include_usage: true } })
        .finalChatCompletion();
      // The helper adds what the SDK always adds (refusal, parsed): the rest is the same message.
      expect(final.choices[0]?.message).toMatchObject(plain.choices[0]!.message);
      expect(final.choices[0]?.finish_reason).toBe(plain.choices[0]?.finish_reason);
      expect(final.usage).toEqual(plain.usage);
    }
  });
});

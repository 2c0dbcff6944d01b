// A provider that answers a streaming request with a plain JSON completion (many OpenAI-compatible
// servers and proxies do), and answers with no `choices`: the real `openai` client over HTTP to the
// fake server, then a whole reference agent through the runtime on a SQLite file.
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentContext } from '../../src/agents/reference/types.js';
import { StepError } from '../../src/core/errors.js';
import type { LlmRequest } from '../../src/llm/client.js';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import type { CallTokens } from '../../src/runtime/token-streams.js';
import type { AgentView } from '../../src/runtime/views.js';
import { runtimesClosedAfterEach, waitForView } from '../helpers/runtime.js';
import { startFakeOpenAI, type FakeOpenAI, type FakeOpenAIOptions } from '../support/fake-openai.js';

let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});
// Registered after the hook above, so it runs first: runtimes close before the server they call.
const startRuntime = runtimesClosedAfterEach();

async function client(options: FakeOpenAIOptions = {}) {
  const server = (fake = await startFakeOpenAI(options));
  return { fake: server, llm: createOpenAiClient({ baseURL: server.url }) };
}

const request: LlmRequest = {
  model: 'gpt-4o-mini',
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Say hi' },
  ],
  timeoutMs: 10_000,
};

/** Asks once; resolves with the answer and every delta written. */
async function ask(llm: ReturnType<typeof createOpenAiClient>, req: LlmRequest = request) {
  const deltas: string[] = [];
  const answer = await llm.complete(req, new AbortController().signal, (delta) => deltas.push(delta));
  return { answer, deltas };
}

async function rejection(promise: Promise<unknown>): Promise<StepError> {
  const err = await promise.then(
    () => expect.fail('expected the call to fail'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StepError);
  return err as StepError;
}

const usageOf = (usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | undefined) => ({
  promptTokens: usage?.prompt_tokens,
  completionTokens: usage?.completion_tokens,
  totalTokens: usage?.total_tokens,
});

describe('the openai client, when a streaming request gets a plain JSON completion', () => {
  it('takes its text and usage, and writes the text as one delta', async () => {
    const { fake, llm } = await client({ streams: false });
    fake.script({ content: 'Hello world, friend' });
    const { answer, deltas } = await ask(llm);

    expect(answer).toEqual({ content: 'Hello world, friend', toolCalls: [], usage: usageOf(fake.calls[0]?.response?.usage) });
    expect(answer.usage.totalTokens).toBeGreaterThan(0);
    expect(deltas).toEqual(['Hello world, friend']);
    // One HTTP call, which asked to stream and got no event stream.
    expect(fake.calls).toHaveLength(1);
    expect(fake.calls[0]).toMatchObject({ stream: true, deltasSent: 0, outcome: 'ok' });
  });

  it('is the answer the same server gives when it streams', async () => {
    const script = { content: 'checking', toolCalls: [{ id: 'call_a', name: 'search', arguments: { q: 'x' } }], usage: { prompt_tokens: 7, completion_tokens: 3 } };
    const plain = await client({ streams: false });
    plain.fake.script(script);
    const fromJson = await ask(plain.llm);
    await plain.fake.close();
    const streaming = await client();
    streaming.fake.script(script);
    const fromStream = await ask(streaming.llm);

    expect(fromJson.answer).toEqual(fromStream.answer);
    expect(fromJson.answer).toEqual({
      content: 'checking',
      toolCalls: [{ id: 'call_a', name: 'search', arguments: '{"q":"x"}' }],
      usage: { promptTokens: 7, completionTokens: 3, totalTokens: 10 },
    });
    // The deltas of a call, joined, are its content, whichever way it came.
    expect(fromJson.deltas).toEqual(['checking']);
    expect(fromStream.deltas.join('')).toBe('checking');
  });

  it('takes tool calls with no text, writing no delta; no usage counts 0s', async () => {
    const { fake, llm } = await client({ streams: false });
    fake.script({ toolCalls: [{ id: 'c1', name: 'weather', arguments: { city: 'Oslo' } }], usage: null });
    const { answer, deltas } = await ask(llm);
    expect(answer).toEqual({
      content: null,
      toolCalls: [{ id: 'c1', name: 'weather', arguments: '{"city":"Oslo"}' }],
      usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    });
    expect(deltas).toEqual([]);
  });

  it('takes it under another content-type, or none: a body with no event that is a JSON object', async () => {
    for (const completionContentType of ['text/plain; charset=utf-8', null, 'text/event-stream']) {
      const { fake, llm } = await client({ streams: false, completionContentType });
      const { answer, deltas } = await ask(llm);
      expect(answer.content).toBe('answer: Say hi');
      expect(deltas).toEqual(['answer: Say hi']);
      expect(fake.calls).toHaveLength(1);
      await fake.close();
    }
  });

  it('a plain answer with neither text nor tool calls, or with an error, is permanent', async () => {
    const { fake, llm } = await client({ streams: false });
    fake.enqueueFaults({ kind: 'malformed' }, { kind: 'status', status: 200, body: { error: { message: 'The model is overloaded.' } } });
    const malformed = await rejection(ask(llm));
    expect(malformed).toMatchObject({ kind: 'permanent', code: 'malformed_llm_answer', message: 'The model returned neither text nor tool calls.' });
    const reported = await rejection(ask(llm));
    expect(reported).toMatchObject({ kind: 'permanent', code: 'llm_error' });
    expect(reported.message).toContain('The model is overloaded.');
  });
});

describe('an answer with no choices is permanent, whichever way it came', () => {
  for (const streams of [false, true]) {
    for (const choices of ['missing', 'empty'] as const) {
      it(`${streams ? 'streamed' : 'plain JSON'}, choices ${choices}`, async () => {
        const { fake, llm } = await client({ streams });
        fake.enqueueFaults({ kind: 'noChoices', choices });
        const deltas: string[] = [];
        const err = await rejection(llm.complete(request, new AbortController().signal, (d) => deltas.push(d)));
        expect(err).toMatchObject({ kind: 'permanent', code: 'malformed_llm_answer' });
        expect(err.message).toMatch(/without any choices/);
        expect(deltas).toEqual([]);
        expect(fake.calls).toHaveLength(1);
      });
    }
  }
});

describe('a reference agent on a provider that answers with plain JSON', () => {
  const contextOf = (view: AgentView) => view.context as AgentContext;
  const idleAfter = (n: number) => (view: AgentView) => view.state === 'idle' && view.progress === n;

  async function agentRuntime(options: FakeOpenAIOptions) {
    const { fake, llm } = await client(options);
    const { runtime } = await startRuntime({ llm, defaults: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 50, timeoutMs: 10_000 } });
    return { fake, runtime };
  }

  it('finishes its task with the answer after one call, its usage counted and its text streamed', async () => {
    const { fake, runtime } = await agentRuntime({ streams: false });
    fake.script({ content: 'Hi there, friend.', usage: { prompt_tokens: 11, completion_tokens: 4 } });
    const streamed = new Map<string, string[]>();
    runtime.tokens.subscribe('plain', (call: CallTokens) => streamed.set(`${call.seq}:${call.turn}`, [...call.deltas]));
    await runtime.spawn('agent', { id: 'plain', input: { system: 'Be brief.', tasks: ['Say hi'] } });
    const view = await waitForView(runtime, 'plain', idleAfter(1), 15_000);

    const usage = { promptTokens: 11, completionTokens: 4, totalTokens: 15, llmCalls: 1 };
    expect(contextOf(view).results).toEqual([{ seq: 1, task: 'Say hi', response: 'Hi there, friend.', usage, turns: 1 }]);
    expect(contextOf(view).usage).toEqual(usage);
    expect(contextOf(view).lastError).toBeNull();
    expect(fake.calls).toHaveLength(1);
    expect(fake.calls[0]).toMatchObject({ stream: true, outcome: 'ok' });
    const llmRows = (await runtime.actions('plain')).filter((a) => a.action === 'callLlm');
    expect(llmRows).toHaveLength(1);
    // The token stream had the answer as one delta.
    expect(streamed.get('1:0')).toEqual(['Hi there, friend.']);
  });

  for (const streams of [false, true]) {
    it(`with no choices (${streams ? 'streamed' : 'plain JSON'}) parks in failed, permanent, after exactly one call`, async () => {
      const { fake, runtime } = await agentRuntime({ streams });
      fake.setFaultPolicy(() => ({ kind: 'noChoices' }));
      await runtime.spawn('agent', { id: 'empty', input: { tasks: ['Say hi'] } });
      const view = await waitForView(runtime, 'empty', (v) => v.state === 'failed', 15_000);

      expect(contextOf(view).lastError).toMatchObject({ kind: 'permanent', step: 'llm', code: 'malformed_llm_answer', attempts: 1 });
      expect(contextOf(view).lastError?.message).toMatch(/without any choices/);
      expect(fake.calls).toHaveLength(1);
      expect(contextOf(view).results).toEqual([]);
    });
  }
});

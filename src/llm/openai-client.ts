import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { createParser } from 'eventsource-parser';
import { StepError } from '../core/errors.js';
import { isTransientStatus, parseRetryAfter } from '../core/backoff.js';
import type { ChatMessage, LlmAnswer, LlmClient, LlmRequest, ToolCall } from './client.js';

export interface OpenAiClientOptions {
  apiKey?: string;
  baseURL?: string;
}

/** The official client with its own retries off: the statechart retries, visibly and durably. */
export function createOpenAiClient(options: OpenAiClientOptions): LlmClient {
  const openai = new OpenAI({
    // The SDK refuses to start without a key; OpenAI-compatible servers often need none.
    apiKey: options.apiKey ?? 'not-needed',
    ...(options.baseURL ? { baseURL: options.baseURL } : {}),
    maxRetries: 0,
  });
  return {
    kind: 'openai',
    description: `OpenAI-compatible API at ${openai.baseURL}`,
    async complete(request: LlmRequest, signal: AbortSignal, onDelta?: (text: string) => void): Promise<LlmAnswer> {
      // The SDK's `timeout` ends at the response's headers; a stream that then stalls is ended by the
      // idle limit: no chunk for `timeoutMs`.
      const idle = new IdleLimit(request.timeoutMs);
      const abort = AbortSignal.any([signal, idle.signal]);
      let answered = false;
      try {
        // The request and its errors through the SDK; the body read here (see `readChunks`).
        const response = await openai.chat.completions.create(
          {
            model: request.model,
            messages: request.messages.map(toOpenAiMessage),
            ...(request.tools?.length
              ? { tools: request.tools.map((t) => ({ type: 'function' as const, function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters } })) }
              : {}),
            stream: true,
            stream_options: { include_usage: true },
          },
          { signal: abort, timeout: request.timeoutMs },
        ).asResponse();
        answered = true;
        idle.reset();
        // Many OpenAI-compatible servers and proxies answer `stream: true` with a plain completion: the
        // SDK would read it as an event stream with no events (it goes by the request, not the
        // answer), so the content-type decides here, by the SDK's own rule for JSON.
        let plain = isJsonMediaType(response.headers.get('content-type')) ? await readText(response, () => idle.reset()) : undefined;
        if (plain === undefined) {
          const streamed = new StreamedAnswer();
          const read = await readChunks(response, (chunk) => {
            idle.reset();
            const text = streamed.add(chunk);
            if (text && onDelta) onDelta(text);
          });
          if (read.plain === undefined) {
            // Some OpenAI-compatible servers end without `[DONE]`: an answer that said why it finished is whole.
            if (!read.done && !streamed.finishReason) throw new Error('the stream ended before the answer finished');
            return streamed.finish();
          }
          // Not one event, and a body that is a JSON object: a plain completion under another content-type.
          plain = read.plain;
        }
        const answer = completionAnswer(plain);
        // A plain answer streams as one delta: the deltas of a call, joined, are its content.
        if (answer.content !== null && onDelta) onDelta(answer.content);
        return answer;
      } catch (err) {
        if (idle.signal.aborted && !signal.aborted) {
          throw new StepError('transient', 'llm_timeout', `The LLM stream sent nothing for ${request.timeoutMs} ms.`, { cause: err });
        }
        // A stream cut after its headers (the connection dropped, the body ended early) is worth asking again.
        if (answered && !signal.aborted && !(err instanceof APIError) && !(err instanceof StepError)) {
          const message = err instanceof Error ? err.message : String(err);
          throw new StepError('transient', 'llm_stream_interrupted', `The LLM stream broke off: ${message}`, { cause: err });
        }
        throw classifyLlmError(err);
      } finally {
        idle.clear();
      }
    },
  };
}

/**
 * The chunks of a streamed completion's body (Server-Sent Events, `data: [DONE]` last). Parsed with
 * `eventsource-parser` rather than the SDK's `Stream`, whose line splitter copies the rest of its
 * buffer at every event: measured 14–21 µs per chunk against 3–6, the largest cost of relaying
 * tokens (docs/performance.md, `stream`). An `error` in the stream fails the call, as the SDK does.
 * Resolves with whether `[DONE]` came; with `plain`, the body, when it held no event at all and is
 * a JSON object (a plain completion sent under another content-type than JSON).
 */
async function readChunks(
  response: Response,
  onChunk: (chunk: OpenAI.Chat.Completions.ChatCompletionChunk) => void,
): Promise<{ done: boolean; plain?: string }> {
  if (!response.body) throw new StepError('transient', 'llm_stream_interrupted', 'The LLM answered without a body.');
  let done = false;
  let events = 0;
  // The body as read so far, kept only until the first event: a JSON body has none.
  let raw = '';
  let failure: StepError | undefined;
  const parser = createParser({
    onEvent: ({ event, data }) => {
      events++;
      if (done || failure) return;
      if (data === '[DONE]') {
        done = true;
        return;
      }
      const parsed = JSON.parse(data) as OpenAI.Chat.Completions.ChatCompletionChunk & { error?: { message?: string } };
      if (event === 'error' || parsed.error) {
        failure = new StepError('permanent', 'llm_error', `The LLM stream reported an error: ${parsed.error?.message ?? data}`);
        return;
      }
      onChunk(parsed);
    },
  });
  const decoder = new TextDecoder();
  for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
    const text = decoder.decode(bytes, { stream: true });
    if (events === 0) raw += text;
    parser.feed(text);
    if (failure) throw failure;
    if (done) return { done: true };
  }
  if (failure) throw failure;
  raw += decoder.decode();
  if (events === 0 && raw.trimStart().startsWith('{')) return { done: false, plain: raw };
  return { done: false };
}

/** The SDK's rule for a JSON answer (`internal/parse`): `application/json`, or any `+json` type. */
function isJsonMediaType(contentType: string | null): boolean {
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
  return !!mediaType && (mediaType.includes('application/json') || mediaType.endsWith('+json'));
}

/** A whole body as text, `onBytes` called as each piece arrives (the idle limit's reset). */
async function readText(response: Response, onBytes: () => void): Promise<string> {
  if (!response.body) return '';
  const decoder = new TextDecoder();
  let text = '';
  for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
    onBytes();
    text += decoder.decode(bytes, { stream: true });
  }
  return text + decoder.decode();
}

/**
 * The answer of a plain (non-streamed) completion: `choices[0].message`'s content and tool calls,
 * the usage. A body that is not a completion, one with an `error`, or one without `choices` is a
 * permanent failure: asking again gets the same.
 */
function completionAnswer(body: string): LlmAnswer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new StepError('permanent', 'malformed_llm_answer', `The LLM answered with a body that is not JSON: ${preview(body)}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new StepError('permanent', 'malformed_llm_answer', `The LLM answered with JSON that is not a completion: ${preview(body)}`);
  }
  const completion = parsed as {
    choices?: unknown;
    usage?: OpenAI.Completions.CompletionUsage | null;
    error?: { message?: unknown } | string | null;
  };
  if (completion.error) {
    const message = typeof completion.error === 'string' ? completion.error : completion.error.message;
    throw new StepError('permanent', 'llm_error', `The LLM reported an error: ${typeof message === 'string' ? message : preview(body)}`);
  }
  if (!Array.isArray(completion.choices) || completion.choices.length === 0) throw noChoices();
  const message = (completion.choices[0] as { message?: unknown } | null)?.message as
    | { content?: unknown; tool_calls?: unknown }
    | null
    | undefined;
  const calls = (Array.isArray(message?.tool_calls) ? (message.tool_calls as unknown[]) : []).map((raw) => {
    const call = (raw ?? {}) as { id?: unknown; function?: { name?: unknown; arguments?: unknown } | null };
    const args = call.function?.arguments;
    return {
      ...(typeof call.id === 'string' ? { id: call.id } : {}),
      ...(typeof call.function?.name === 'string' ? { name: call.function.name } : {}),
      // Some servers send the arguments as an object: the model's JSON text is what the agent keeps.
      arguments: typeof args === 'string' ? args : args == null ? '' : JSON.stringify(args),
    };
  });
  const content = typeof message?.content === 'string' ? message.content : '';
  return answerOf(content, calls, completion.usage ?? undefined);
}

function noChoices(): StepError {
  return new StepError('permanent', 'malformed_llm_answer', 'The LLM answered without any choices: no message to take.');
}

function preview(text: string): string {
  const flat = text.trim().replace(/\s+/g, ' ');
  return flat === '' ? '(empty)' : flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

/** An abort signal that fires once `ms` pass without a `reset()`. */
class IdleLimit {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ms: number) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  reset(): void {
    if (this.timer) this.timer.refresh();
    else this.timer = setTimeout(() => this.controller.abort(new Error('idle')), this.ms);
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

/**
 * The answer of a streamed completion, put together chunk by chunk: the text, each tool call (its id
 * and name in its first fragment, its arguments in pieces, by `index`), the usage of the last chunk.
 * By hand rather than with the SDK's `ChatCompletionStream`, which rebuilds a whole snapshot of the
 * completion at every chunk: at thousands of chunks per second per process, that is most of the cost.
 */
class StreamedAnswer {
  private content = '';
  private readonly calls: { id?: string; name?: string; arguments: string }[] = [];
  private usage: OpenAI.Completions.CompletionUsage | undefined;
  /** Whether any chunk had a choice: a stream whose chunks have none answered nothing. */
  private choices = false;
  /** Why the model stopped (`stop`, `tool_calls`, `length`…), once a chunk said it. */
  finishReason: string | undefined;

  /** Takes one chunk; returns the text it adds. */
  add(chunk: OpenAI.Chat.Completions.ChatCompletionChunk): string | undefined {
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (choice) this.choices = true;
    if (choice?.finish_reason) this.finishReason = choice.finish_reason;
    const delta = choice?.delta;
    if (!delta) return undefined;
    for (const fragment of delta.tool_calls ?? []) {
      const call = (this.calls[fragment.index] ??= { arguments: '' });
      if (fragment.id) call.id = fragment.id;
      if (fragment.function?.name) call.name = fragment.function.name;
      if (fragment.function?.arguments) call.arguments += fragment.function.arguments;
    }
    const text = delta.content;
    if (typeof text !== 'string' || text === '') return undefined;
    this.content += text;
    return text;
  }

  finish(): LlmAnswer {
    if (!this.choices) throw noChoices();
    return answerOf(this.content, this.calls, this.usage);
  }
}

/** An answer from its text and tool calls, whichever way they came: each call needs an id and a name, and one of the two is needed. */
function answerOf(text: string, calls: readonly ({ id?: string; name?: string; arguments: string } | undefined)[], usage: OpenAI.Completions.CompletionUsage | undefined): LlmAnswer {
  const toolCalls: ToolCall[] = [];
  for (const call of calls) {
    if (!call) continue;
    if (typeof call.id !== 'string' || typeof call.name !== 'string') {
      throw new StepError('permanent', 'malformed_llm_answer', 'The model returned a tool call without an id and a function name.');
    }
    toolCalls.push({ id: call.id, name: call.name, arguments: call.arguments });
  }
  const content = text === '' ? null : text;
  if (content === null && toolCalls.length === 0) {
    throw new StepError('permanent', 'malformed_llm_answer', 'The model returned neither text nor tool calls.');
  }
  return { content, toolCalls, usage: usageOf(usage) };
}

function usageOf(usage: OpenAI.Completions.CompletionUsage | undefined): LlmAnswer['usage'] {
  return {
    promptTokens: usage?.prompt_tokens ?? 0,
    completionTokens: usage?.completion_tokens ?? 0,
    totalTokens: usage?.total_tokens ?? (usage?.prompt_tokens ?? 0) + (usage?.completion_tokens ?? 0),
  };
}

function toOpenAiMessage(message: ChatMessage): OpenAI.Chat.Completions.ChatCompletionMessageParam {
  switch (message.role) {
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content,
        ...(message.toolCalls?.length
          ? { tool_calls: message.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) }
          : {}),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    default:
      return message;
  }
}

/**
 * The contract's rule: timeouts, network errors, 408, 429 and 5xx are transient; other 4xx are
 * permanent. A 429 for an exhausted quota is permanent too: waiting will not refill it.
 */
export function classifyLlmError(err: unknown): StepError {
  if (err instanceof StepError) return err;
  // Subclasses first: timeouts and aborts are APIErrors without a status.
  if (err instanceof APIConnectionTimeoutError) return new StepError('transient', 'llm_timeout', 'The LLM call timed out.', { cause: err });
  if (err instanceof APIUserAbortError) return new StepError('transient', 'llm_aborted', 'The LLM call was aborted.', { cause: err });
  if (err instanceof APIConnectionError) {
    return new StepError('transient', 'llm_unreachable', `The LLM API could not be reached: ${err.message}`, { cause: err });
  }
  if (err instanceof APIError && typeof err.status === 'number') {
    const status = err.status;
    const retryAfterMs = retryAfterOf(err.headers);
    const quota = status === 429 && err.code === 'insufficient_quota';
    const transient = !quota && isTransientStatus(status);
    return new StepError(transient ? 'transient' : 'permanent', transient ? 'llm_unavailable' : 'llm_rejected', `The LLM API answered ${err.message}`, {
      status,
      cause: err,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new StepError('permanent', 'llm_error', `The LLM call failed: ${message}`, { cause: err });
}

function retryAfterOf(headers: Headers | undefined): number | undefined {
  if (!headers) return undefined;
  const ms = Number(headers.get('retry-after-ms'));
  if (headers.has('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms;
  return parseRetryAfter(headers.get('retry-after'));
}

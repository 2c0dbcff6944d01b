import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { StepError } from '../core/errors.js';
import { isTransientStatus, parseRetryAfter } from '../core/backoff.js';
import type { LlmClient, LlmRequest } from './client.js';

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
    async complete(request: LlmRequest, signal: AbortSignal): Promise<string> {
      let response: OpenAI.Chat.Completions.ChatCompletion;
      try {
        response = await openai.chat.completions.create(
          { model: request.model, messages: toMessages(request) },
          { signal, timeout: request.timeoutMs },
        );
      } catch (err) {
        throw classifyLlmError(err);
      }
      const text = response.choices?.[0]?.message?.content;
      if (typeof text !== 'string' || text === '') {
        throw new StepError('permanent', 'malformed_llm_answer', 'The model returned no text in choices[0].message.content.');
      }
      return text;
    },
  };
}

function toMessages(request: LlmRequest): OpenAI.Chat.Completions.ChatCompletionMessageParam[] {
  return [
    ...(request.system ? [{ role: 'system' as const, content: request.system }] : []),
    { role: 'user' as const, content: request.task },
  ];
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

import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
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
    async complete(request: LlmRequest, signal: AbortSignal): Promise<LlmAnswer> {
      let response: OpenAI.Chat.Completions.ChatCompletion;
      try {
        response = await openai.chat.completions.create(
          {
            model: request.model,
            messages: request.messages.map(toOpenAiMessage),
            ...(request.tools?.length
              ? { tools: request.tools.map((t) => ({ type: 'function' as const, function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters } })) }
              : {}),
          },
          { signal, timeout: request.timeoutMs },
        );
      } catch (err) {
        throw classifyLlmError(err);
      }
      return toAnswer(response);
    },
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

/** `choices[0].message`: text or function calls; anything else is a malformed answer (permanent). */
function toAnswer(response: OpenAI.Chat.Completions.ChatCompletion): LlmAnswer {
  const message = response.choices?.[0]?.message;
  const toolCalls: ToolCall[] = [];
  for (const call of message?.tool_calls ?? []) {
    if (call.type !== 'function' || typeof call.id !== 'string' || typeof call.function?.name !== 'string') {
      throw new StepError('permanent', 'malformed_llm_answer', 'The model returned a tool call without an id and a function name.');
    }
    toolCalls.push({ id: call.id, name: call.function.name, arguments: typeof call.function.arguments === 'string' ? call.function.arguments : '' });
  }
  const content = typeof message?.content === 'string' && message.content !== '' ? message.content : null;
  if (content === null && toolCalls.length === 0) {
    throw new StepError('permanent', 'malformed_llm_answer', 'The model returned neither text in choices[0].message.content nor tool calls.');
  }
  const usage = response.usage;
  return {
    content,
    toolCalls,
    usage: {
      promptTokens: usage?.prompt_tokens ?? 0,
      completionTokens: usage?.completion_tokens ?? 0,
      totalTokens: usage?.total_tokens ?? (usage?.prompt_tokens ?? 0) + (usage?.completion_tokens ?? 0),
    },
  };
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

/**
 * THE LLM interface. The statechart never sees `openai`: it sees an actor that resolves to an
 * answer (text, or tool calls to make) or rejects with a StepError saying whether the failure is
 * transient or permanent. Messages are our own plain-JSON shape: they are stored in checkpoints.
 */

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

/** A function call the model asks for; `arguments` is the model's JSON text, as it sent it. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A tool as the model is told of it. */
export interface ToolDefinition {
  name: string;
  description?: string;
  /** A JSON Schema object. */
  parameters: Record<string, unknown>;
}

export interface LlmRequest {
  model: string;
  messages: ChatMessage[];
  /** Offered to the model; absent or empty: a plain completion. */
  tools?: ToolDefinition[];
  timeoutMs: number;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** What one call answered: text, or tool calls (possibly with text), and what it cost (0s when the provider says nothing). */
export interface LlmAnswer {
  content: string | null;
  toolCalls: ToolCall[];
  usage: TokenUsage;
}

export interface LlmClient {
  readonly kind: 'openai' | 'simulated';
  /** For the start-up log line. */
  readonly description: string;
  /**
   * Asks the model. `onDelta`, when given, receives the answer's text as it is generated, in order:
   * a view only (the caller commits the resolved answer, whole); their concatenation is its `content`.
   */
  complete(request: LlmRequest, signal: AbortSignal, onDelta?: (text: string) => void): Promise<LlmAnswer>;
}

export const NO_USAGE: TokenUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

/** An answer that is only text. */
export function textAnswer(content: string, usage: TokenUsage = NO_USAGE): LlmAnswer {
  return { content, toolCalls: [], usage };
}

/** The text of the request's last user message: what the model is asked now. */
export function lastUserText(request: Pick<LlmRequest, 'messages'>): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i]!;
    if (message.role === 'user') return message.content;
  }
  return '';
}

/** What one LLM call asks: the model, an optional system prompt, the user's task, and a time limit. */
export interface LlmRequest {
  model: string;
  system: string | null;
  task: string;
  timeoutMs: number;
}

/**
 * THE LLM interface. The statechart never sees `openai`: it sees an actor that resolves to text or
 * rejects with a StepError saying whether the failure is transient or permanent.
 */
export interface LlmClient {
  readonly kind: 'openai' | 'simulated';
  /** For the start-up log line. */
  readonly description: string;
  complete(request: LlmRequest, signal: AbortSignal): Promise<string>;
}

import type { FailureKind } from '../../core/errors.js';

/** What a user gives when spawning an `agent` (contract: "The reference machine"). */
export interface AgentInput {
  tasks?: string[];
  system?: string;
  model?: string;
  webhook?: string;
  retry?: { maxAttempts?: number; baseDelayMs?: number; timeoutMs?: number };
}

/** Server-wide defaults an agent's input may override. */
export interface AgentDefaults {
  model: string;
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Time limit of one LLM call. */
  timeoutMs: number;
  /** Time limit of one webhook delivery. Unset: `timeoutMs` bounds the webhook too. */
  webhookTimeoutMs?: number;
}

export interface RetryPolicy {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Time limit of one LLM call. */
  timeoutMs: number;
  /** Time limit of one webhook delivery; absent in checkpoints written before it existed (then `timeoutMs`). */
  webhookTimeoutMs?: number;
}

export interface CurrentTask {
  /** The task's 1-based number in this agent's life; part of the effect's idempotency key. */
  seq: number;
  task: string;
}

export type AgentStep = 'llm' | 'effect';

export interface LastError {
  kind: FailureKind;
  step: AgentStep;
  code: string;
  message: string;
  status?: number;
  attempts: number;
}

/** Plain JSON only: this object is written in every checkpoint. Answers live here only until their effect is done. */
export interface AgentContext {
  model: string;
  system: string | null;
  webhook: string | null;
  retry: RetryPolicy;
  queue: string[];
  /** How many tasks were taken from the queue so far (the last task's seq). */
  taken: number;
  current: CurrentTask | null;
  answer: string | null;
  /** Calls made for the current step, the one in flight included. */
  attempt: number;
  /** Epoch ms of the next attempt while backing off (a durable timer, not an `after`). */
  nextAttemptAt: number | null;
  /** Seeded PRNG state for jitter: reproducible, and it survives restores. */
  rng: number;
  lastError: LastError | null;
  progress: number;
  skipped: number;
}

export type AgentEvent =
  | { type: 'task.add'; task: string }
  | { type: 'retry' }
  | { type: 'task.skip' }
  | { type: 'finish' }
  /** Sent by the runtime, never by users: the checkpoint of a commit barrier is durable. */
  | { type: 'runtime.committed' };

/** Input of the `callLlm` actor. Small on purpose: a pending child's input is stored in the checkpoint. */
/** Input of the `callLlm` actor: the LLM port's request. */
export type { LlmRequest } from '../../llm/client.js';

/** Input of the `runSideEffect` actor. The idempotency key is `<agentId>:<seq>`. */
export interface EffectRequest {
  seq: number;
  task: string;
  response: string;
  webhook: string | null;
  timeoutMs: number;
}

export interface EffectResult {
  delivered: boolean;
  status?: number;
  idempotencyKey: string;
}

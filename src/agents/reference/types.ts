import type { FailureKind } from '../../core/errors.js';
import type { ChatMessage, LlmAnswer, LlmRequest, TokenUsage, ToolCall } from '../../llm/client.js';

/** What a user gives when spawning an `agent` (contract: "The reference machine"). */
export interface AgentInput {
  tasks?: string[];
  system?: string;
  model?: string;
  webhook?: string;
  retry?: { maxAttempts?: number; baseDelayMs?: number; timeoutMs?: number };
  /** HTTP tools and agent tools the model may call (contract: "Tools", "Agents as tools"); tools registered in code on the server are offered too. */
  tools?: (HttpToolInput | AgentToolInput)[];
  /** MCP servers configured on the server whose tools are offered, as `<server>__<tool>` (docs/tools.md, "MCP tools"). */
  mcp?: string[];
  /** LLM calls allowed per task (default 8). */
  maxTurns?: number;
  /** `task` (default): each task starts a fresh exchange; `conversation`: tasks are the user turns of one conversation. */
  memory?: 'task' | 'conversation';
  /**
   * Finish (final state `done`) once a task is answered or skipped and no other is queued, instead
   * of waiting in `idle` for more. Set by an agent tool's call for the child it spawns.
   */
  finishAfterTasks?: boolean;
  /**
   * What the agent's LLM calls may spend over its life, checked before each call (absent: no limit).
   * `maxCostUsd` needs a price for the agent's model (`AgentDefaults.prices`).
   */
  budget?: { maxTotalTokens?: number; maxCostUsd?: number };
}

/** What a model's tokens cost, in US dollars per million. */
export interface ModelPrice {
  inputPerMTok: number;
  outputPerMTok: number;
}

/** An agent's budget as its context keeps it: the input's limits, and its model's price when one was known at spawn. */
export interface AgentBudget {
  maxTotalTokens?: number;
  maxCostUsd?: number;
  price?: ModelPrice;
}

/** What an agent with a budget spent so far: its answers' tokens, and their cost when its model's price is known. */
export interface Spent {
  totalTokens: number;
  costUsd?: number;
}

/** The limits a `budget.raise` event gives. */
export interface BudgetRaise {
  maxTotalTokens?: number;
  maxCostUsd?: number;
}

export interface HttpToolInput {
  name: string;
  description?: string;
  /** A JSON Schema object (default `{"type":"object"}`). */
  parameters?: Record<string, unknown>;
  url: string;
  approval?: boolean;
  /** Calls to `url` running at once in this process, at most, for all agents that declare it; more wait in line. */
  concurrency?: number;
}

/** A tool that is another agent: a call spawns one child agent of `machine` for the call's `task` (contract: "Agents as tools"). */
export interface AgentToolInput {
  name: string;
  description?: string;
  agent: { machine: string; input?: Record<string, unknown>; timeoutMs?: number };
  approval?: boolean;
}

/**
 * A tool as an agent's checkpoints keep it: an HTTP tool from the spawn input, or one registered in
 * code (found by name in the server's registry when it runs). Frozen at spawn, so every turn and
 * every restart offers the model the same tools.
 */
export interface ToolSpec {
  name: string;
  description: string | null;
  parameters: Record<string, unknown>;
  approval: boolean;
  /** Set for an HTTP tool; absent for a tool registered in code. */
  url?: string;
  /** An HTTP tool's `concurrency` (a code tool's is read from the tool itself); absent: no limit. */
  concurrency?: number;
  /** Set for an agent tool: the child agent each call spawns, and how long its answer is waited for (default 10 min). */
  agent?: { machine: string; input?: Record<string, unknown>; timeoutMs?: number };
  /** Set for a tool of an MCP server: which server, and the tool's name there (`name` is `<server>__<tool>`). */
  mcp?: { server: string; tool: string };
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
  /** Prices by model name: an agent's spending in dollars (`budget.maxCostUsd`) needs its model's. */
  prices?: Readonly<Record<string, ModelPrice>>;
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

export type AgentStep = 'llm' | 'tool' | 'effect';

export interface LastError {
  kind: FailureKind;
  step: AgentStep;
  code: string;
  message: string;
  status?: number;
  attempts: number;
}

/** Token counts summed over calls, with the number of calls. */
export interface UsageTotals extends TokenUsage {
  llmCalls: number;
}

/** A completed task's outcome (contract: "Results and usage"). */
export interface TaskResult {
  seq: number;
  task: string;
  response: string;
  usage: UsageTotals;
  /** LLM calls the task took. */
  turns: number;
}

export interface PendingApproval {
  callId: string;
  name: string;
  /** Parsed from the model's JSON (the text itself when it is not JSON). */
  arguments: unknown;
}

export interface ToolDecision {
  approved: boolean;
  reason?: string;
}

/** Plain JSON only: this object is written in every checkpoint. */
export interface AgentContext {
  model: string;
  system: string | null;
  webhook: string | null;
  retry: RetryPolicy;
  tools: ToolSpec[];
  maxTurns: number;
  memory: 'task' | 'conversation';
  queue: string[];
  /** How many tasks were taken from the queue so far (the last task's seq). */
  taken: number;
  current: CurrentTask | null;
  /**
   * The current task's exchange so far: (with memory `conversation`, the earlier tasks' messages)
   * the task, each answer with its tool calls, each tool result. The next LLM request is this.
   */
  messages: ChatMessage[];
  /** The messages of the tasks completed so far (memory `conversation`; empty otherwise). */
  conversation: ChatMessage[];
  /** LLM calls made for the current task. */
  turn: number;
  /** The current task's response once the model answered without tool calls. */
  answer: string | null;
  /** Calls of the last answer that need a person's decision and have none yet. */
  pendingApprovals: PendingApproval[];
  /** Decisions on the last answer's calls, by call id. */
  decisions: Record<string, ToolDecision>;
  /** What the current task's calls cost so far. */
  taskUsage: UsageTotals;
  /** What every LLM call of this agent's life cost. */
  usage: UsageTotals;
  results: TaskResult[];
  /**
   * The last answer's calls of agent tools, by call id: the child agent each spawned. Absent in
   * checkpoints written before agent tools existed.
   */
  agentCalls?: Record<string, string>;
  /**
   * `true`: input `finishAfterTasks`. Absent otherwise, so an agent without it (and every checkpoint
   * written before it existed) waits in `idle` as before.
   */
  finishAfterTasks?: true;
  /** Input `mcp`: the MCP servers whose tools are offered. Absent without (and in checkpoints written before MCP tools existed). */
  mcp?: string[];
  /**
   * The MCP tools offered for the current task, listed for its first LLM call and committed with its
   * answer, so that every later call of the task (and a restored agent) offers the same. Absent or
   * null: none listed yet (null once a task that had a list ended).
   */
  mcpTools?: ToolSpec[] | null;
  /**
   * Input `budget`, raised by `budget.raise` (budget.ts). Absent without one: no limit (and in every
   * checkpoint written before budgets existed).
   */
  budget?: AgentBudget;
  /** What the agent's answers spent since spawn; present exactly when `budget` is. */
  spent?: Spent;
  /** Calls made for the current step, the one in flight included. */
  attempt: number;
  /** Epoch ms of the next attempt while backing off (the deadline of the invoked backoff timer). */
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
  | { type: 'tool.approve'; callId: string }
  | { type: 'tool.reject'; callId: string; reason?: string }
  | ({ type: 'budget.raise' } & BudgetRaise)
  /** Sent by the runtime, never by users: the checkpoint of a commit barrier is durable. */
  | { type: 'runtime.committed' };

/** Input of the `callLlm` actor: the LLM port's request (a pending child's input is stored in the checkpoint). */
export type { LlmRequest } from '../../llm/client.js';
/**
 * What the `callLlm` actor is given: the request, and which call of the task it is (for its streamed
 * tokens; absent in checkpoints written before calls streamed).
 */
export type LlmStepInput = LlmRequest & {
  seq?: number;
  turn?: number;
  /** The MCP servers whose tools the call lists and offers (a task's first call, when the agent has `mcp`). */
  mcp?: string[];
};
/** Output of the `callLlm` actor: the answer, and the MCP tools the call listed and offered (when its input had `mcp`). */
export type LlmStepOutput = LlmAnswer & { mcpTools?: ToolSpec[] };
/** Output of the `callLlm` actor. */
export type { LlmAnswer };

/** Input of the `runTools` actor: the calls of one committed answer. Keys are `<agentId>:<seq>:<callId>`. */
export interface ToolsRequest {
  seq: number;
  calls: ToolCall[];
  /** The tools those calls name (an unknown name has none). */
  tools: ToolSpec[];
  decisions: Record<string, ToolDecision>;
  timeoutMs: number;
}

/** One call's result as the model reads it: `content` is the tool message. */
export interface ToolResult {
  callId: string;
  name: string;
  ok: boolean;
  content: string;
}

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

import { StepError } from '../core/errors.js';
import { textAnswer } from '../llm/client.js';
import { createSimulatedLlm } from '../llm/simulated-client.js';
import type { AgentContext } from '../agents/reference/types.js';
import { agentDefinition } from '../agents/reference/definition.js';
import { BUDGET_EXCEEDED, overBudget } from '../agents/reference/budget.js';
import type { PathTestOptions } from './path-tests.js';

/**
 * The path-test settings of the reference `agent` machine, shared by its test suite and by
 * `durable-agents paths agent`. Its LLM, effect, timers and commit barrier are all controlled by
 * the paths; the simulated LLM below is never called.
 */
export function agentPathTestOptions(): PathTestOptions {
  return {
    // The real registration: the same name, version and zod schemas as `serve` uses.
    machine: agentDefinition({ llm: createSimulatedLlm() }),
    // Two attempts per step, so "retries exhausted" is two errors away; two LLM calls per task, so
    // the turn limit is one tool round away; one tool that needs a person's approval, and one that
    // is another agent (a call spawns a child agent, whose report answers it).
    input: {
      retry: { maxAttempts: 2 },
      maxTurns: 2,
      tools: [
        { name: 'lookup', url: 'http://127.0.0.1:9/lookup', approval: true },
        { name: 'research', agent: { machine: 'agent' } },
      ],
    },
    events: [
      { type: 'task.add', task: 'Summarize the report' },
      { type: 'retry' },
      { type: 'task.skip' },
      { type: 'finish' },
      { type: 'tool.approve', callId: 'call_1' },
      { type: 'tool.reject', callId: 'call_1', reason: 'Not that one.' },
    ],
    // What a `research` child may report: its answer to the task, its end, its failure.
    children: {
      agent: {
        response: [{ seq: 1, task: 'Find the revenue', response: 'Revenue went up 4 %.' }],
        done: [{ answer: 'Revenue went up 4 %.' }],
        failed: [{ name: 'StepError', message: 'The model is down.' }],
      },
    },
    outcomes: {
      llm: {
        done: [
          textAnswer('The report says revenue went up.', { promptTokens: 12, completionTokens: 8, totalTokens: 20 }),
          { content: null, toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{"q":"revenue"}' }], usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 } },
          { content: null, toolCalls: [{ id: 'call_2', name: 'research', arguments: '{"task":"Find the revenue"}' }], usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 } },
        ],
        error: [
          new StepError('transient', 'llm_unavailable', 'The model is overloaded (HTTP 503).', { status: 503 }),
          new StepError('permanent', 'llm_rejected', 'The request was refused (HTTP 400).', { status: 400 }),
        ],
      },
      tools: {
        done: [[{ callId: 'call_1', name: 'lookup', ok: true, content: '{"revenue":"up"}' }]],
        error: [
          new StepError('transient', 'tool_unavailable', 'The tool answered HTTP 503.', { status: 503 }),
          new StepError('permanent', 'outbound_not_allowed', 'The tool is at an address the policy refuses.'),
        ],
      },
      effect: {
        done: [{ delivered: true, status: 200, idempotencyKey: 'path-agent:1' }],
        error: [
          new StepError('transient', 'webhook_unavailable', 'The webhook answered HTTP 502.', { status: 502 }),
          new StepError('permanent', 'webhook_rejected', 'The webhook answered HTTP 422.', { status: 422 }),
        ],
      },
    },
    // What the guards read: a queued task (hasQueuedTask), the attempt count (mayRetry), the step
    // that failed (failedAtLlm), calls waiting for a person (awaitsApproval, isPendingCall), whether
    // the last answer asks for tools (answerCallsTools; a child's report, a tool message after it,
    // turns this off, as the tools' results do: callsAnswered, isAwaitedChild), turns left
    // (turnsLeft). Texts, counters and the PRNG state are left out. (Keeping the unanswered calls
    // themselves instead: 592 paths rather than 389, no transition more.)
    serializeState: ({ value, status, context }) => {
      const c = context as AgentContext;
      const last = c.messages.at(-1);
      return JSON.stringify({
        value,
        status,
        queued: c.queue.length > 0,
        attempt: c.attempt,
        failedAt: c.lastError?.step ?? null,
        pending: c.pendingApprovals.map((p) => p.callId),
        asksTools: last?.role === 'assistant' && (last.toolCalls?.length ?? 0) > 0,
        turnsLeft: c.turn < c.maxTurns,
        // The budget's guards (overBudget, failedOnBudget): always false for an agent without a
        // budget, as here, so they split no state; test/agents/reference/budget.paths.test.ts has one.
        overBudget: overBudget(c),
        onBudget: c.lastError?.code === BUDGET_EXCEEDED,
      });
    },
    // The backoff deadline is read from the wall clock when a retry is scheduled, so it differs
    // between the uninterrupted run and a crashed one (two runs). Whether there is one must match;
    // without this, every crash case of a path with a retry fails (445 of 597, checked).
    comparable: {
      context: (context: AgentContext) => {
        const { nextAttemptAt, ...rest } = context;
        return { ...rest, backingOff: nextAttemptAt !== null };
      },
      input: (src: string, input: { at?: unknown }) => (src === 'sleepUntil' ? { at: typeof input.at } : input),
    },
  };
}

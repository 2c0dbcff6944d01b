// Over 300 lines on purpose: the chart is read (and reviewed as a storage format) best whole, with
// the actions its states name beside it; its pure rules are in steps.ts, its upgrades in upgrades.ts.
import { assign, enqueueActions, fromPromise, setup } from 'xstate';
import { backoffDelay, retryDelay } from '../../core/backoff.js';
import { nextRandom, seedFrom } from '../../core/random.js';
import { AWAIT_COMMIT_TAG, COMMITTED_EVENT } from '../../durable/commit-barrier.js';
import { spawnAgent } from '../../durable/spawn-agent.js';
import { endOfMcpTask, mcpServersToList, offeredTools } from './mcp-tools.js';
import {
  addUsage, agentCallsTimeoutMs, agentCallsToStart, answerMessage, approvalsNeeded, childReportContent, DEFAULT_MAX_TURNS, failureKind, NO_TOTALS, requestMessages, unansweredCalls,
  hasAnswerToActOn, retryAfterMs, TASK_PARAMETERS, toLastError, toolDefinitions,
} from './steps.js';
import { budgetExceededError, initialBudget, overBudget, priceOf, raisedBudget, spend, BUDGET_EXCEEDED } from './budget.js';
import type {
  AgentContext, AgentDefaults, AgentEvent, AgentInput, AgentStep, EffectRequest, EffectResult, LastError, LlmStepInput, LlmStepOutput, ToolResult, ToolSpec, ToolsRequest,
} from './types.js';

export { AGENT_UPGRADES } from './upgrades.js';
export { DEFAULT_MAX_TURNS } from './steps.js';

export const AGENT_MACHINE_VERSION = '3';

export const DEFAULT_AGENT_DEFAULTS: AgentDefaults = {
  model: 'gpt-4o-mini',
  maxAttempts: 5,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  timeoutMs: 30_000,
};

/** A provider asking us to wait longer than this is treated as asking for this. */
const RETRY_AFTER_CAP_MS = 5 * 60_000;

/** The thrown value of an `xstate.error.actor.*` event, typed loosely because it is whatever the actor threw. */
const errorOf = ({ event }: { event: { error?: unknown } }): unknown => event.error;

const unbound = (name: string) => () =>
  Promise.reject(new Error(`The actor "${name}" is bound by the runtime (agentDefinition); this machine was run without it.`));

/**
 * The reference statechart, a tool-calling loop: idle → callingLLM → persisted → sideEffect → …
 * An answer is committed (`persisted` is a commit barrier) before anything acts on it. In
 * `sideEffect`, an answer with tool calls runs them (after a person's decision for tools marked
 * `approval`), and their results go back to the model: `callingLLM` again, at most `maxTurns` calls
 * per task. An answer without tool calls is the task's response: its webhook runs, then `idle` (or
 * `done`, for an agent spawned with `finishAfterTasks` once nothing more is queued).
 * Pure: no I/O here; the runtime provides the actors by name and starts each only once the
 * checkpoint that invoked it is committed.
 *
 * The actor names, invoke ids and state names below are a storage format (they are in every
 * checkpoint): never rename one without bumping `version` and saying in `AGENT_UPGRADES` how an
 * older checkpoint reads in the new version.
 */
/** `codeTools`: the tools registered in code on this server, offered to every agent besides its input's HTTP tools. */
export function createAgentMachine(defaults: AgentDefaults = DEFAULT_AGENT_DEFAULTS, codeTools: readonly ToolSpec[] = []) {
  return setup({
    types: {
      context: {} as AgentContext,
      events: {} as AgentEvent,
      input: {} as AgentInput,
    },
    actors: {
      callLlm: fromPromise<LlmStepOutput, LlmStepInput>(unbound('callLlm')),
      runTools: fromPromise<ToolResult[], ToolsRequest>(unbound('runTools')),
      runSideEffect: fromPromise<EffectResult, EffectRequest>(unbound('runSideEffect')),
      sleepUntil: fromPromise<void, { at: number }>(unbound('sleepUntil')),
    },
    guards: {
      hasQueuedTask: ({ context }) => context.queue.length > 0,
      mayRetry: ({ context }, error: unknown) =>
        failureKind(error) === 'transient' && context.attempt < context.retry.maxAttempts,
      // `retry` asks the LLM again when the agent has no answer to act on: an LLM call failed, or the
      // MCP servers could not be listed before a task's first call (a tool failure with no answer yet).
      failedAtLlm: ({ context }) => context.lastError === null || context.lastError.step === 'llm' || !hasAnswerToActOn(context.messages),
      answerCallsTools: ({ context }) => unansweredCalls(context.messages).length > 0,
      awaitsApproval: ({ context }) => context.pendingApprovals.length > 0,
      isPendingCall: ({ context, event }) =>
        (event.type === 'tool.approve' || event.type === 'tool.reject') && context.pendingApprovals.some((p) => p.callId === event.callId),
      turnsLeft: ({ context }) => context.turn < context.maxTurns,
      callsAnswered: ({ context }) => unansweredCalls(context.messages).length === 0,
      callsAnsweredTurnsLeft: ({ context }) => unansweredCalls(context.messages).length === 0 && context.turn < context.maxTurns,
      /** A report from the child agent of one of the last answer's calls that has no result yet. */
      isAwaitedChild: ({ context, event }) => awaitedCall(context, event) !== undefined,
      /** What the agent spent reached a limit of its budget (budget.ts): no more LLM calls. */
      overBudget: ({ context }) => overBudget(context),
      failedOnBudget: ({ context }) => context.lastError?.code === BUDGET_EXCEEDED,
      hasBudget: ({ context }) => context.budget !== undefined,
    },
    actions: {
      enqueueTask: assign({
        queue: ({ context, event }) => (event.type === 'task.add' ? [...context.queue, event.task] : context.queue),
      }),
      takeNextTask: assign(({ context }) => {
        const [task, ...rest] = context.queue;
        // A task starts from what the last one left behind, with its own exchange. (Keys that
        // `endOfTask` lacks come before its spread: after it, V8 builds the object ~20x slower.)
        return {
          queue: rest,
          taken: context.taken + 1,
          nextAttemptAt: null,
          ...endOfTask,
          current: { seq: context.taken + 1, task: task ?? '' },
          messages: [...context.conversation, { role: 'user' as const, content: task ?? '' }],
        };
      }),
      countAttempt: assign({ attempt: ({ context }) => context.attempt + 1, nextAttemptAt: null }),
      scheduleRetry: assign(({ context }, error: unknown) => {
        const { value, state } = nextRandom(context.rng);
        const backoff = backoffDelay(context.attempt, context.retry, value);
        const delay = retryDelay(backoff, retryAfterMs(error), RETRY_AFTER_CAP_MS);
        return { rng: state, nextAttemptAt: Date.now() + delay };
      }),
      storeAnswer: assign(({ context }, answer: LlmStepOutput) => ({
        messages: [...context.messages, answerMessage(answer)],
        turn: context.turn + 1,
        answer: answer.toolCalls.length === 0 ? answer.content : null,
        pendingApprovals: approvalsNeeded(answer.toolCalls, offeredTools({ tools: context.tools, mcpTools: answer.mcpTools ?? context.mcpTools })),
        // The MCP tools the task's first call listed and offered: committed with its answer (mcp-tools.ts).
        ...(answer.mcpTools ? { mcpTools: answer.mcpTools } : {}),
        decisions: {},
        taskUsage: addUsage(context.taskUsage, answer.usage),
        usage: addUsage(context.usage, answer.usage),
        ...(context.spent ? { spent: spend(context, answer.usage) } : {}),
        attempt: 0,
        nextAttemptAt: null,
      })),
      decide: assign(({ context, event }) => {
        if (event.type !== 'tool.approve' && event.type !== 'tool.reject') return {};
        const decision = event.type === 'tool.approve' ? { approved: true } : { approved: false, ...(event.reason ? { reason: event.reason } : {}) };
        return {
          decisions: { ...context.decisions, [event.callId]: decision },
          pendingApprovals: context.pendingApprovals.filter((p) => p.callId !== event.callId),
        };
      }),
      // Agent tools: one child agent per call, created with the checkpoint entering `runningTools`
      // (spawnAgent); entering again after a retry names the same children, which changes nothing.
      startAgentCalls: enqueueActions(({ context, self, enqueue }) => {
        const calls = agentCallsToStart(context, self.id);
        if (calls.length === 0) return;
        enqueue.assign({ agentCalls: { ...context.agentCalls, ...Object.fromEntries(calls.map((c) => [c.callId, c.childId])) } });
        for (const call of calls) enqueue(spawnAgent(call.machine, { id: call.childId, input: call.input }));
      }),
      storeChildReport: assign(({ context, event }) => {
        const callId = awaitedCall(context, event);
        if (callId === undefined) return {};
        return { messages: [...context.messages, { role: 'tool' as const, toolCallId: callId, content: childReportContent(event as never) }] };
      }),
      // The children that did not answer in time: each call's result says so, and the model goes on.
      timeOutAgentCalls: assign(({ context }) => ({
        messages: [
          ...context.messages,
          ...unansweredCalls(context.messages).map((call) => ({
            role: 'tool' as const,
            toolCallId: call.id,
            content: JSON.stringify({ error: `The agent did not answer within ${duration(agentCallsTimeoutMs(context))}.`, timedOut: true }),
          })),
        ],
      })),
      storeToolResults: assign(({ context }, results: ToolResult[]) => ({
        messages: [...context.messages, ...results.map((r) => ({ role: 'tool' as const, toolCallId: r.callId, content: r.content }))],
        attempt: 0,
        nextAttemptAt: null,
      })),
      recordFailure: assign({
        lastError: ({ context }, params: { step: AgentStep; error: unknown }) =>
          toLastError(params.step, params.error, context.attempt),
        nextAttemptAt: null,
      }),
      recordTurnLimit: assign({
        lastError: ({ context }): LastError => ({
          kind: 'permanent',
          step: 'llm',
          code: 'turn_limit',
          message: `The task used its ${context.maxTurns} LLM calls (maxTurns) without a final answer.`,
          attempts: context.turn,
        }),
      }),
      // Before a call: no call was made for this step (the one the entry of `requesting` counted never starts).
      recordBudgetExceeded: assign(({ context }) => ({ lastError: budgetExceededError(context), attempt: 0, nextAttemptAt: null })),
      raiseBudget: assign(({ context, event }) => (event.type === 'budget.raise' && context.budget ? { budget: raisedBudget(context.budget, event) } : {})),
      completeTask: assign(({ context }) => ({
        progress: context.progress + 1,
        results: context.current
          ? [...context.results, { seq: context.current.seq, task: context.current.task, response: context.answer ?? '', usage: context.taskUsage, turns: context.turn }]
          : context.results,
        conversation: context.memory === 'conversation' ? context.messages : [],
        ...endOfTask,
        ...endOfMcpTask(context),
      })),
      skipTask: assign(({ context }) => ({ skipped: context.skipped + 1, ...endOfTask, ...endOfMcpTask(context) })),
      // An agent that is to go once its tasks are done (`finishAfterTasks`: an agent tool's child)
      // tells itself `finish` when nothing is queued. XState handles the raised event after `idle`'s
      // `always`, in the same macrostep, so the agent passes through `idle` to `done` in one
      // checkpoint. No transition of its own: the chart's shape, which stored checkpoints and the
      // path tests' coverage rely on, stays as it was.
      finishAfterLastTask: enqueueActions(({ context, enqueue }) => {
        if (context.finishAfterTasks === true && context.queue.length === 0) enqueue.raise({ type: 'finish' });
      }),
      resetAttempts: assign({ attempt: 0, nextAttemptAt: null }),
    },
    delays: { agentCallsTimeout: ({ context }) => agentCallsTimeoutMs(context) },
  }).createMachine({
    id: 'agent',
    version: AGENT_MACHINE_VERSION,
    context: ({ input, self }) => ({
      model: input.model ?? defaults.model,
      system: input.system ?? null,
      webhook: input.webhook ?? null,
      retry: {
        maxAttempts: input.retry?.maxAttempts ?? defaults.maxAttempts,
        baseDelayMs: input.retry?.baseDelayMs ?? defaults.baseDelayMs,
        maxDelayMs: Math.max(defaults.maxDelayMs, input.retry?.baseDelayMs ?? 0),
        timeoutMs: input.retry?.timeoutMs ?? defaults.timeoutMs,
        // The input has one time limit: a spawn that sets it bounds the LLM, the tools and the webhook alike.
        webhookTimeoutMs: input.retry?.timeoutMs ?? defaults.webhookTimeoutMs ?? defaults.timeoutMs,
      },
      tools: [
        ...(input.tools ?? []).map((t): ToolSpec =>
          'agent' in t
            ? { name: t.name, description: t.description ?? null, parameters: TASK_PARAMETERS, approval: t.approval ?? false, agent: t.agent }
            : { name: t.name, description: t.description ?? null, parameters: t.parameters ?? { type: 'object' }, approval: t.approval ?? false, url: t.url, ...(t.concurrency === undefined ? {} : { concurrency: t.concurrency }) },
        ),
        ...codeTools,
      ],
      maxTurns: input.maxTurns ?? DEFAULT_MAX_TURNS,
      memory: input.memory ?? 'task',
      // Only when set: the context of an agent without it is what it was before the option existed.
      ...(input.finishAfterTasks === true ? { finishAfterTasks: true as const } : {}),
      ...(input.mcp?.length ? { mcp: [...input.mcp] } : {}),
      // Likewise: an agent spawned without a budget has neither `budget` nor `spent`.
      ...initialBudget(input, priceOf(defaults, input.model ?? defaults.model)),
      queue: [...(input.tasks ?? [])],
      taken: 0,
      current: null,
      messages: [],
      conversation: [],
      turn: 0,
      answer: null,
      pendingApprovals: [],
      decisions: {},
      taskUsage: NO_TOTALS,
      usage: NO_TOTALS,
      results: [],
      attempt: 0,
      nextAttemptAt: null,
      rng: seedFrom(self.id),
      lastError: null,
      progress: 0,
      skipped: 0,
    }),
    initial: 'idle',
    // A task may be queued whatever the agent is doing; idle picks it up. A child agent's report may
    // come while the other calls of the same answer still run: it is kept whenever it comes.
    on: {
      'task.add': { actions: 'enqueueTask' },
      'agent.response': { guard: 'isAwaitedChild', actions: 'storeChildReport' },
      'agent.done': { guard: 'isAwaitedChild', actions: 'storeChildReport' },
      'agent.failed': { guard: 'isAwaitedChild', actions: 'storeChildReport' },
      // Raises the limits for the calls to come; in `failed` on its budget, the agent goes on (below).
      // Guarded, so that an agent spawned without a budget does not list it among the events it takes.
      'budget.raise': { guard: 'hasBudget', actions: 'raiseBudget' },
    },
    states: {
      idle: {
        always: { guard: 'hasQueuedTask', target: 'callingLLM', actions: 'takeNextTask' },
        on: { finish: 'done' },
      },
      callingLLM: {
        // Checked before each call: entering for a task's first call, after tool results, and after
        // `retry` or `budget.raise` in `failed`. (A backoff's next attempt follows a failed call that
        // reported nothing spent.) The invoke of `requesting` just entered is stopped before it starts.
        always: { guard: 'overBudget', target: '#agent.failed', actions: 'recordBudgetExceeded' },
        initial: 'requesting',
        states: {
          requesting: {
            entry: 'countAttempt',
            invoke: {
              id: 'llm',
              src: 'callLlm',
              input: ({ context }: { context: AgentContext }): LlmStepInput => ({
                model: context.model,
                messages: requestMessages(context),
                ...(offeredTools(context).length ? { tools: toolDefinitions(offeredTools(context)) } : {}),
                // A task's first call lists the agent's MCP tools (and offers them): its answer records them.
                ...(mcpServersToList(context) ? { mcp: mcpServersToList(context) } : {}),
                timeoutMs: context.retry.timeoutMs,
                // Which call this is, for its streamed tokens.
                seq: context.current?.seq ?? 0,
                turn: context.turn,
              }),
              onDone: { target: '#agent.persisted', actions: { type: 'storeAnswer', params: ({ event }) => event.output } },
              onError: retryOrFail('backingOff', 'llm'),
            },
          },
          backingOff: backoff('llmBackoff', 'requesting'),
        },
      },
      persisted: {
        tags: [AWAIT_COMMIT_TAG],
        on: { [COMMITTED_EVENT]: 'sideEffect' },
      },
      sideEffect: {
        initial: 'routing',
        states: {
          // What the committed answer asks for: tool calls (after any approvals), or its webhook.
          routing: {
            always: [
              { guard: 'awaitsApproval', target: 'awaitingApproval' },
              { guard: 'answerCallsTools', target: 'runningTools' },
              { target: 'requesting' },
            ],
          },
          awaitingApproval: {
            on: {
              'tool.approve': { guard: 'isPendingCall', actions: 'decide', target: 'routing' },
              'tool.reject': { guard: 'isPendingCall', actions: 'decide', target: 'routing' },
            },
          },
          runningTools: {
            entry: ['countAttempt', 'startAgentCalls'],
            invoke: {
              id: 'tools',
              src: 'runTools',
              input: ({ context }) => {
                // The calls of agent tools that started a child are answered by the child's report instead.
                const calls = unansweredCalls(context.messages).filter((c) => !(c.id in (context.agentCalls ?? {})));
                return {
                  seq: context.current?.seq ?? 0,
                  calls,
                  tools: offeredTools(context).filter((t) => calls.some((c) => c.name === t.name)),
                  decisions: context.decisions,
                  timeoutMs: context.retry.webhookTimeoutMs ?? context.retry.timeoutMs,
                };
              },
              onDone: { target: 'awaitingAgents', actions: { type: 'storeToolResults', params: ({ event }) => event.output } },
              onError: retryOrFail('toolsBackoff', 'tool'),
            },
          },
          // Until every call has its result: the child agents' reports come into the inbox (a durable
          // wait: nothing runs here, and a passivated agent is woken by the report).
          // At most the agent tools' time limit (a durable delay: it keeps its deadline across restarts).
          awaitingAgents: {
            always: [
              { guard: 'callsAnsweredTurnsLeft', target: '#agent.callingLLM' },
              { guard: 'callsAnswered', target: '#agent.failed', actions: 'recordTurnLimit' },
            ],
            after: {
              agentCallsTimeout: [
                { guard: 'turnsLeft', target: '#agent.callingLLM', actions: 'timeOutAgentCalls' },
                { target: '#agent.failed', actions: ['timeOutAgentCalls', 'recordTurnLimit'] },
              ],
            },
          },
          toolsBackoff: backoff('toolsBackoff', 'runningTools'),
          // The task's response is in: its webhook (named as in version 2, whose checkpoints restore here).
          requesting: {
            entry: 'countAttempt',
            invoke: {
              id: 'effect',
              src: 'runSideEffect',
              input: ({ context }) => ({
                seq: context.current?.seq ?? 0,
                task: context.current?.task ?? '',
                response: context.answer ?? '',
                webhook: context.webhook,
                timeoutMs: context.retry.webhookTimeoutMs ?? context.retry.timeoutMs,
              }),
              onDone: { target: '#agent.idle', actions: ['completeTask', 'finishAfterLastTask'] },
              onError: retryOrFail('backingOff', 'effect'),
            },
          },
          backingOff: backoff('effectBackoff', 'requesting'),
        },
      },
      failed: {
        on: {
          retry: [
            { guard: 'failedAtLlm', target: 'callingLLM', actions: 'resetAttempts' },
            // The tool calls not yet recorded run again with the same keys; a delivered task's webhook likewise.
            { target: 'sideEffect', actions: 'resetAttempts' },
          ],
          'task.skip': { target: 'idle', actions: ['skipTask', 'finishAfterLastTask'] },
          // Parked by its budget: the call it did not make is made now, if the raise is enough (else
          // `callingLLM` parks it here again, its lastError saying what it spent against the new limits).
          'budget.raise': { guard: 'failedOnBudget', target: 'callingLLM', actions: ['raiseBudget', 'resetAttempts'] },
        },
      },
      done: { type: 'final' },
    },
  });
}

/**
 * A failed step: back off and try again while attempts remain and the failure is transient, else
 * park the agent in `failed` with the step that failed.
 */
function retryOrFail(backoffState: string, step: AgentStep) {
  return [
    { guard: { type: 'mayRetry', params: errorOf }, target: backoffState, actions: { type: 'scheduleRetry', params: errorOf } },
    { target: '#agent.failed', actions: { type: 'recordFailure', params: ({ event }: { event: { error?: unknown } }) => ({ step, error: event.error }) } },
  ] as const;
}

/**
 * A durable wait until the next attempt: an invoked timer until an absolute deadline kept in context.
 * (Written before the runtime made `after` durable; version 3 checkpoints hold it, so it stays.)
 */
function backoff(id: string, then: string) {
  return {
    invoke: {
      id,
      src: 'sleepUntil',
      input: ({ context }: { context: AgentContext }) => ({ at: context.nextAttemptAt ?? 0 }),
      onDone: then,
      // A timer that fails has still ended the wait: an unhandled actor error would crash the agent.
      onError: then,
    },
  } as const;
}

const duration = (ms: number) => (ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`);

/** The call whose child agent sent this report, if it is one of the last answer's calls with no result yet. */
function awaitedCall(context: AgentContext, event: { type: string; agentId?: unknown }): string | undefined {
  const agentCalls = context.agentCalls;
  if (typeof event.agentId !== 'string' || !agentCalls) return undefined;
  return unansweredCalls(context.messages).find((c) => agentCalls[c.id] === event.agentId)?.id;
}

/** What a task leaves behind once it is completed or skipped. */
const endOfTask = {
  current: null,
  messages: [],
  turn: 0,
  answer: null,
  pendingApprovals: [],
  decisions: {},
  taskUsage: NO_TOTALS,
  attempt: 0,
  lastError: null,
} satisfies Partial<AgentContext>;

export const agentMachine = createAgentMachine();

import { assign, fromPromise, setup } from 'xstate';
import { StepError } from '../../core/errors.js';
import { AWAIT_COMMIT_TAG, COMMITTED_EVENT } from '../../durable/commit-barrier.js';
import type { SnapshotUpgrade } from '../../durable/definition.js';
import { backoffDelay, retryDelay } from '../../core/backoff.js';
import { nextRandom, seedFrom } from '../../core/random.js';
import type {
  AgentContext,
  AgentDefaults,
  AgentEvent,
  AgentInput,
  AgentStep,
  EffectRequest,
  EffectResult,
  LastError,
  LlmRequest,
} from './types.js';

export const AGENT_MACHINE_VERSION = '2';

/**
 * Checkpoints of earlier versions, read as this one. Version 1 invoked an `awaitCommit` actor (id
 * `commit`) in `persisted` where version 2 has a commit barrier: its snapshot is the same without
 * that child, and the runtime's committed event then moves the restored agent on.
 */
export const AGENT_UPGRADES: Readonly<Record<string, SnapshotUpgrade>> = {
  '1': (snapshot) => {
    const { commit: _commit, ...children } = snapshot.children ?? {};
    return { ...snapshot, children };
  },
};

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
 * The reference statechart: idle → callingLLM → persisted → sideEffect → idle, with failed and done.
 * Pure: no I/O here. The runtime provides the actors by name and commits a checkpoint before any
 * invoked actor starts; `persisted` (entered with the answer in context) is a commit barrier, left
 * only once the runtime says its checkpoint is durable, so the side effect never runs on an unsaved answer.
 *
 * The actor names, invoke ids and state names below are a storage format (they are in every
 * checkpoint): never rename one without bumping `version` and saying in `AGENT_UPGRADES` how an
 * older checkpoint reads in the new version.
 */
export function createAgentMachine(defaults: AgentDefaults = DEFAULT_AGENT_DEFAULTS) {
  return setup({
    types: {
      context: {} as AgentContext,
      events: {} as AgentEvent,
      input: {} as AgentInput,
    },
    actors: {
      callLlm: fromPromise<string, LlmRequest>(unbound('callLlm')),
      runSideEffect: fromPromise<EffectResult, EffectRequest>(unbound('runSideEffect')),
      sleepUntil: fromPromise<void, { at: number }>(unbound('sleepUntil')),
    },
    guards: {
      hasQueuedTask: ({ context }) => context.queue.length > 0,
      mayRetry: ({ context }, error: unknown) =>
        failureKind(error) === 'transient' && context.attempt < context.retry.maxAttempts,
      failedAtLlm: ({ context }) => context.lastError?.step !== 'effect',
    },
    actions: {
      enqueueTask: assign({
        queue: ({ context, event }) => (event.type === 'task.add' ? [...context.queue, event.task] : context.queue),
      }),
      takeNextTask: assign(({ context }) => {
        const [task, ...rest] = context.queue;
        return {
          queue: rest,
          taken: context.taken + 1,
          current: { seq: context.taken + 1, task: task ?? '' },
          answer: null,
          attempt: 0,
          nextAttemptAt: null,
          lastError: null,
        };
      }),
      countAttempt: assign({ attempt: ({ context }) => context.attempt + 1, nextAttemptAt: null }),
      scheduleRetry: assign(({ context }, error: unknown) => {
        const { value, state } = nextRandom(context.rng);
        const backoff = backoffDelay(context.attempt, context.retry, value);
        const delay = retryDelay(backoff, retryAfterMs(error), RETRY_AFTER_CAP_MS);
        return { rng: state, nextAttemptAt: Date.now() + delay };
      }),
      storeAnswer: assign({
        answer: (_, output: string) => output,
        attempt: 0,
        nextAttemptAt: null,
      }),
      recordFailure: assign({
        lastError: ({ context }, params: { step: AgentStep; error: unknown }) =>
          toLastError(params.step, params.error, context.attempt),
        nextAttemptAt: null,
      }),
      completeTask: assign({
        progress: ({ context }) => context.progress + 1,
        current: null,
        answer: null,
        attempt: 0,
        lastError: null,
      }),
      skipTask: assign({
        skipped: ({ context }) => context.skipped + 1,
        current: null,
        answer: null,
        attempt: 0,
        lastError: null,
      }),
      resetAttempts: assign({ attempt: 0, nextAttemptAt: null }),
    },
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
        // The input has one time limit: a spawn that sets it bounds the LLM and the webhook alike.
        webhookTimeoutMs: input.retry?.timeoutMs ?? defaults.webhookTimeoutMs ?? defaults.timeoutMs,
      },
      queue: [...(input.tasks ?? [])],
      taken: 0,
      current: null,
      answer: null,
      attempt: 0,
      nextAttemptAt: null,
      rng: seedFrom(self.id),
      lastError: null,
      progress: 0,
      skipped: 0,
    }),
    initial: 'idle',
    // A task may be queued whatever the agent is doing; idle picks it up.
    on: { 'task.add': { actions: 'enqueueTask' } },
    states: {
      idle: {
        always: { guard: 'hasQueuedTask', target: 'callingLLM', actions: 'takeNextTask' },
        on: { finish: 'done' },
      },
      callingLLM: {
        initial: 'requesting',
        states: {
          requesting: {
            entry: 'countAttempt',
            invoke: {
              id: 'llm',
              src: 'callLlm',
              input: ({ context }) => ({
                model: context.model,
                system: context.system,
                task: context.current?.task ?? '',
                timeoutMs: context.retry.timeoutMs,
              }),
              onDone: { target: '#agent.persisted', actions: { type: 'storeAnswer', params: ({ event }) => event.output } },
              onError: [
                {
                  guard: { type: 'mayRetry', params: errorOf },
                  target: 'backingOff',
                  actions: { type: 'scheduleRetry', params: errorOf },
                },
                {
                  target: '#agent.failed',
                  actions: { type: 'recordFailure', params: ({ event }) => ({ step: 'llm' as const, error: event.error }) },
                },
              ],
            },
          },
          backingOff: {
            invoke: {
              id: 'llmBackoff',
              src: 'sleepUntil',
              input: ({ context }) => ({ at: context.nextAttemptAt ?? 0 }),
              onDone: 'requesting',
              // A timer that fails has still ended the wait: an unhandled actor error would crash the agent.
              onError: 'requesting',
            },
          },
        },
      },
      persisted: {
        tags: [AWAIT_COMMIT_TAG],
        on: { [COMMITTED_EVENT]: 'sideEffect' },
      },
      sideEffect: {
        initial: 'requesting',
        states: {
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
              onDone: { target: '#agent.idle', actions: 'completeTask' },
              onError: [
                {
                  guard: { type: 'mayRetry', params: errorOf },
                  target: 'backingOff',
                  actions: { type: 'scheduleRetry', params: errorOf },
                },
                {
                  target: '#agent.failed',
                  actions: { type: 'recordFailure', params: ({ event }) => ({ step: 'effect' as const, error: event.error }) },
                },
              ],
            },
          },
          backingOff: {
            invoke: {
              id: 'effectBackoff',
              src: 'sleepUntil',
              input: ({ context }) => ({ at: context.nextAttemptAt ?? 0 }),
              onDone: 'requesting',
              // A timer that fails has still ended the wait: an unhandled actor error would crash the agent.
              onError: 'requesting',
            },
          },
        },
      },
      failed: {
        on: {
          retry: [
            { guard: 'failedAtLlm', target: 'callingLLM', actions: 'resetAttempts' },
            { target: 'sideEffect', actions: 'resetAttempts' },
          ],
          'task.skip': { target: 'idle', actions: 'skipTask' },
        },
      },
      done: { type: 'final' },
    },
  });
}

export const agentMachine = createAgentMachine();

/** Errors reach the chart as whatever the actor threw; only a StepError-shaped value says "transient". */
function failureKind(error: unknown): 'transient' | 'permanent' {
  return isStepErrorLike(error) && error.kind === 'transient' ? 'transient' : 'permanent';
}

function retryAfterMs(error: unknown): number | undefined {
  return isStepErrorLike(error) ? error.retryAfterMs : undefined;
}

function toLastError(step: AgentStep, error: unknown, attempts: number): LastError {
  if (isStepErrorLike(error)) {
    return {
      kind: error.kind,
      step,
      code: error.code,
      message: error.message,
      ...(error.status === undefined ? {} : { status: error.status }),
      attempts,
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { kind: 'permanent', step, code: 'unexpected_error', message, attempts };
}

function isStepErrorLike(error: unknown): error is Pick<StepError, 'kind' | 'code' | 'message' | 'status' | 'retryAfterMs'> {
  if (error instanceof StepError) return true;
  if (typeof error !== 'object' || error === null) return false;
  const kind = (error as { kind?: unknown }).kind;
  return (kind === 'transient' || kind === 'permanent') && typeof (error as { message?: unknown }).message === 'string';
}

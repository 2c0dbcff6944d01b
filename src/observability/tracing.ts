/**
 * Spans for the runtime's work, made after the fact from the runtime observer (the observer is
 * told once a transition is committed, with the action that caused it and its latency).
 *
 * One trace per transition:
 *
 *   agent.transition            from the start of its cause (the call) to the commit
 *   └─ agent.llm_call           an actor the machine declares `llm`: [transition time − latency, transition time]
 *      | agent.effect           one it declares `effect`
 *      | agent.tool_call × n    one per tool call of an actor it declares `tools` (each over the batch's time)
 *      | agent.action           any other logged invoked actor
 *
 * LLM and tool spans carry the OpenTelemetry GenAI attributes (`gen_ai.*`): the model, the tokens,
 * the tool's name and call id (an MCP server's tool: `mcp.server` and `mcp.tool` too); never a
 * prompt, an answer, arguments or a result.
 *
 * Every span carries `agent.id` and `agent.seq` (the checkpoint the transition wrote, also the
 * action-log row's seq), so a trace search for one agent lists its history in order.
 *
 * Only `@opentelemetry/api` here: with no SDK registered (no OTEL_* variables, see otel.ts) the
 * tracer is a no-op, and a library user's own SDK receives these spans unchanged.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Tracer } from '@opentelemetry/api';
import { ATTR_ERROR_TYPE, ATTR_HTTP_RESPONSE_STATUS_CODE } from '@opentelemetry/semantic-conventions';
import type { RuntimeObserver } from '../runtime/observer.js';
import type { ActorDeclaration } from '../durable/definition.js';
import { stateText } from '../core/state-value.js';
import { readAction, type ActionReading } from './action-outcome.js';
import { readLlmCall } from './llm-call.js';
import { readToolCalls, withToolCalls, type EffectLookup, type ToolCallReading } from './tool-calls.js';

export const TRACER_NAME = 'durable-agents';

export const SPAN = {
  transition: 'agent.transition',
  llmCall: 'agent.llm_call',
  effect: 'agent.effect',
  toolCall: 'agent.tool_call',
  action: 'agent.action',
} as const;

/**
 * The GenAI semantic conventions' attributes (still "development" there, so kept here rather than
 * imported from `@opentelemetry/semantic-conventions/incubating`, whose names may change).
 */
export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  requestModel: 'gen_ai.request.model',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
} as const;

export interface TracingOptions {
  /** Where a transiently failed tool batch's recorded results are looked up (see tool-calls.ts); without it, every call of the batch is a failed span. */
  effects?: EffectLookup;
}

/** The tracer registered globally (a no-op until an SDK is registered). */
export function globalTracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

export function createTracingObserver(tracer: Tracer = globalTracer(), { effects }: TracingOptions = {}): RuntimeObserver {
  return {
    transitionCommitted(event) {
      const committedAt = Date.now();
      const agent: Attributes = { 'agent.id': event.agentId, 'agent.seq': event.seq, 'agent.machine': event.machine };
      const reading = event.action && readAction(event.action);
      const callStart = reading?.ms !== undefined ? event.at - reading.ms : event.at;
      // An explicit root: the commit callback may run inside whatever context happened to be
      // active (an HTTP request long finished); a transition is its own trace.
      const transition = tracer.startSpan(
        SPAN.transition,
        {
          startTime: callStart,
          attributes: {
            ...agent,
            'agent.status': event.status,
            'xstate.event.type': event.eventType,
            'xstate.state': stateText(event.state),
            ...(event.action ? { 'agent.action': event.action.action } : {}),
          },
        },
        ROOT_CONTEXT,
      );
      if (event.action && reading) {
        const parent = trace.setSpan(ROOT_CONTEXT, transition);
        const common: Attributes = {
          ...agent,
          'agent.action': event.action.action,
          ...(reading.attempt !== undefined ? { 'agent.attempt': reading.attempt } : {}),
        };
        const place: SpanPlace = { start: callStart, end: event.at, common, parent };
        if (event.actor?.kind === 'tools') {
          withToolCalls(readToolCalls(event.agentId, reading, event.at, effects), (calls) => {
            for (const call of calls) toolCallSpan(tracer, call, place);
          });
        } else {
          callSpan(tracer, event.agentId, event.actor, reading, place);
        }
      }
      if (event.status === 'error') transition.setStatus({ code: SpanStatusCode.ERROR });
      transition.end(Math.max(committedAt, event.at));
    },
    agentFailed(event) {
      // Not a transition: a point in time, as a span of its own so it can be found by agent.id.
      const span = tracer.startSpan('agent.failed', { attributes: { 'agent.id': event.agentId, 'agent.failure_reason': event.reason } }, ROOT_CONTEXT);
      span.setStatus({ code: SpanStatusCode.ERROR, message: event.error.message });
      span.end();
    },
  };
}

/** What a call span is placed by: its time, the attributes every span of the transition has, its parent. */
interface SpanPlace {
  start: number;
  end: number;
  common: Attributes;
  parent: Context;
}

/** An LLM call, an effect or another logged actor's call, a child of the transition it caused. */
function callSpan(tracer: Tracer, agentId: string, actor: ActorDeclaration | undefined, reading: ActionReading, place: SpanPlace): void {
  const name = actor?.kind === 'llm' ? SPAN.llmCall : actor?.kind === 'effect' ? SPAN.effect : SPAN.action;
  const span = tracer.startSpan(
    name,
    {
      kind: SpanKind.CLIENT,
      startTime: place.start,
      attributes: {
        ...place.common,
        'agent.outcome': reading.outcome,
        ...callAttributes(agentId, actor, reading),
        ...(reading.errorCode ? { [ATTR_ERROR_TYPE]: reading.errorCode } : {}),
        ...(reading.errorStatus !== undefined ? { [ATTR_HTTP_RESPONSE_STATUS_CODE]: reading.errorStatus } : {}),
      },
    },
    place.parent,
  );
  if (reading.outcome !== 'ok') span.setStatus({ code: SpanStatusCode.ERROR, message: reading.errorMessage ?? reading.outcome });
  span.end(place.end);
}

/**
 * One tool call, a child of the transition its batch caused, over the batch's time (a call's own
 * is not recorded). Its name and call id, never its arguments or result (they can be large and private).
 */
function toolCallSpan(tracer: Tracer, call: ToolCallReading, place: SpanPlace): void {
  const span = tracer.startSpan(
    SPAN.toolCall,
    {
      kind: SpanKind.CLIENT,
      startTime: place.start,
      attributes: {
        ...place.common,
        [GEN_AI.operationName]: 'execute_tool',
        [GEN_AI.toolName]: call.name,
        [GEN_AI.toolCallId]: call.callId,
        // An MCP server's tool: which server, and the tool's own name there (gen_ai.tool.name is `<server>__<tool>`).
        ...(call.mcp ? { 'mcp.server': call.mcp.server, 'mcp.tool': call.mcp.tool } : {}),
        ...(call.idempotencyKey ? { 'agent.idempotency_key': call.idempotencyKey } : {}),
        'agent.outcome': call.outcome,
        ...(call.errorCode ? { [ATTR_ERROR_TYPE]: call.errorCode } : {}),
      },
    },
    place.parent,
  );
  // The message is the code only: what a tool or the model said may be private.
  if (call.outcome === 'error') span.setStatus({ code: SpanStatusCode.ERROR, ...(call.errorCode ? { message: call.errorCode } : {}) });
  span.end(place.end);
}

/** What is worth a glance in a trace, never the prompt or the answer (they can be large and private). */
function callAttributes(agentId: string, actor: ActorDeclaration | undefined, reading: ActionReading): Attributes {
  const { input, output } = reading;
  const out = output && typeof output === 'object' ? (output as Record<string, unknown>) : {};
  if (actor?.kind === 'llm') {
    const { model, usage } = readLlmCall(reading);
    return {
      [GEN_AI.operationName]: 'chat',
      ...(model !== undefined ? { [GEN_AI.requestModel]: model } : {}),
      ...(usage ? { [GEN_AI.inputTokens]: usage.inputTokens, [GEN_AI.outputTokens]: usage.outputTokens } : {}),
    };
  }
  if (actor?.kind === 'effect') {
    // A failed effect has no output; its key is then the one the machine declares for the call.
    const key = typeof out.idempotencyKey === 'string' ? out.idempotencyKey : actor.idempotencyKey?.({ agentId, input: input ?? null });
    return {
      ...(key ? { 'agent.idempotency_key': key } : {}),
      ...(typeof out.status === 'number' ? { [ATTR_HTTP_RESPONSE_STATUS_CODE]: out.status } : {}),
      ...(typeof out.delivered === 'boolean' ? { 'agent.effect.delivered': out.delivered } : {}),
    };
  }
  return {};
}

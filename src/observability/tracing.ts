/**
 * Spans for the runtime's work, made after the fact from the runtime observer (the observer is
 * told once a transition is committed, with the action that caused it and its latency).
 *
 * One trace per transition:
 *
 *   agent.transition            from the start of its cause (the call) to the commit
 *   └─ agent.llm_call           an actor the machine declares `llm`: [transition time − latency, transition time]
 *      | agent.effect           one it declares `effect`
 *      | agent.action           any other logged invoked actor
 *
 * Every span carries `agent.id` and `agent.seq` (the checkpoint the transition wrote, also the
 * action-log row's seq), so a trace search for one agent lists its history in order.
 *
 * Only `@opentelemetry/api` here: with no SDK registered (no OTEL_* variables, see otel.ts) the
 * tracer is a no-op, and a library user's own SDK receives these spans unchanged.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Tracer } from '@opentelemetry/api';
import { ATTR_ERROR_TYPE, ATTR_HTTP_RESPONSE_STATUS_CODE } from '@opentelemetry/semantic-conventions';
import type { RuntimeObserver } from '../runtime/observer.js';
import type { ActorDeclaration } from '../durable/definition.js';
import { stateText } from '../core/state-value.js';
import { readAction } from './action-outcome.js';

export const TRACER_NAME = 'durable-agents';

export const SPAN = {
  transition: 'agent.transition',
  llmCall: 'agent.llm_call',
  effect: 'agent.effect',
  action: 'agent.action',
} as const;

/** The tracer registered globally (a no-op until an SDK is registered). */
export function globalTracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

export function createTracingObserver(tracer: Tracer = globalTracer()): RuntimeObserver {
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
        const kind = event.actor?.kind;
        const name = kind === 'llm' ? SPAN.llmCall : kind === 'effect' ? SPAN.effect : SPAN.action;
        const call = tracer.startSpan(
          name,
          {
            kind: SpanKind.CLIENT,
            startTime: callStart,
            attributes: {
              ...agent,
              'agent.action': event.action.action,
              'agent.outcome': reading.outcome,
              ...(reading.attempt !== undefined ? { 'agent.attempt': reading.attempt } : {}),
              ...callAttributes(event.agentId, event.actor, reading.input, reading.output),
              ...(reading.errorCode ? { [ATTR_ERROR_TYPE]: reading.errorCode } : {}),
              ...(reading.errorStatus !== undefined ? { [ATTR_HTTP_RESPONSE_STATUS_CODE]: reading.errorStatus } : {}),
            },
          },
          trace.setSpan(ROOT_CONTEXT, transition),
        );
        if (reading.outcome !== 'ok') call.setStatus({ code: SpanStatusCode.ERROR, message: reading.errorMessage ?? reading.outcome });
        call.end(event.at);
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

/** What is worth a glance in a trace, never the prompt or the answer (they can be large and private). */
function callAttributes(agentId: string, actor: ActorDeclaration | undefined, input: Record<string, unknown> | undefined, output: unknown): Attributes {
  const out = output && typeof output === 'object' ? (output as Record<string, unknown>) : {};
  if (actor?.kind === 'llm') {
    return typeof input?.model === 'string' ? { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': input.model } : {};
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

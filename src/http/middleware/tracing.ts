/**
 * One SERVER span per HTTP request, named `<METHOD> <route pattern>` (OpenTelemetry's HTTP
 * convention: `GET /agents/:id`, never the raw path), with `agent.id` on `/agents/:id/...` routes
 * and `agent.seq` on `/agents/:id/checkpoints/:seq`. A W3C `traceparent` header from the caller
 * makes it a child of the caller's span.
 *
 * Only `@opentelemetry/api`: without a registered SDK (no OTEL_* variables) the spans are no-ops.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Context as OtelContext, type Tracer } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_URL_PATH,
} from '@opentelemetry/semantic-conventions';
import type { MiddlewareHandler } from 'hono';
import { globalTracer } from '../../observability/tracing.js';
import { agentIdOf, routeOf } from './request-log.js';

/** `tracer`: default, the globally registered one, looked up per request (an SDK may be registered later). */
export function httpTracing(tracer?: Tracer): MiddlewareHandler {
  return async function traceRequest(c, next) {
    const method = c.req.method;
    const span = (tracer ?? globalTracer()).startSpan(
      method,
      {
        kind: SpanKind.SERVER,
        attributes: { [ATTR_HTTP_REQUEST_METHOD]: method, [ATTR_URL_PATH]: c.req.path },
      },
      parentFrom(c.req.header('traceparent')),
    );
    // Without an SDK (no OTEL_* variables) the span records nothing: skip the per-request work.
    if (!span.isRecording()) return next();
    try {
      await next();
    } finally {
      const route = routeOf(c);
      const status = c.res.status;
      span.updateName(`${method} ${route}`);
      span.setAttribute(ATTR_HTTP_ROUTE, route);
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
      const agentId = agentIdOf(c.req.path);
      if (agentId) span.setAttribute('agent.id', agentId);
      const seq = /^\/agents\/[^/]+\/checkpoints\/(\d{1,15})$/.exec(c.req.path)?.[1];
      if (seq) span.setAttribute('agent.seq', Number(seq));
      // A 4xx is the caller's mistake, not the server's: only a 5xx marks the span failed.
      if (status >= 500) {
        // Hono's error handler turned the thrown error into the response; c.error keeps it.
        if (c.error) span.recordException(c.error);
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute(ATTR_ERROR_TYPE, String(status));
      }
      span.end();
    }
  };
}

/** A W3C trace context header (`00-<trace id>-<span id>-<flags>`) as a remote parent; anything else is ignored. */
function parentFrom(header: string | undefined): OtelContext {
  const match = header && /^[\da-f]{2}-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/.exec(header.trim());
  if (!match) return ROOT_CONTEXT;
  const [, traceId, spanId, flags] = match as unknown as [string, string, string, string];
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  });
}

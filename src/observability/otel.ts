/**
 * The OpenTelemetry SDK for `durable-agents serve`, set up only when the standard OTEL_* variables
 * ask for traces: nothing is recorded or sent otherwise.
 *
 * - `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`: off.
 * - `OTEL_TRACES_EXPORTER=otlp` (or unset while `OTEL_EXPORTER_OTLP_ENDPOINT` /
 *   `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set): OTLP over HTTP (JSON) to that endpoint
 *   (default http://localhost:4318/v1/traces); the exporter reads the other OTEL_EXPORTER_OTLP_*
 *   variables (headers, timeout, compression) from the process environment itself.
 * - `OTEL_TRACES_EXPORTER=console`: spans printed to stdout, for a quick look.
 * - `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` name the service (default `durable-agents`);
 *   `OTEL_TRACES_SAMPLER*` and `OTEL_BSP_*` are read by the SDK itself.
 */
import type { Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { Logger } from '../core/logger.js';
import { tracesExporters } from './otel-env.js';
import { TRACER_NAME } from './tracing.js';

export { tracesExporters };

export interface Tracing {
  readonly provider: BasicTracerProvider;
  readonly tracer: Tracer;
  /** What the variables chose, for the start-up log line. */
  readonly exporters: readonly string[];
  /** Sends what is buffered and stops. */
  shutdown(): Promise<void>;
}

/** The SDK as the environment asks, or undefined when it does not ask for traces. */
export function tracingFromEnv(env: NodeJS.ProcessEnv, log?: Logger): Tracing | undefined {
  const processors: SpanProcessor[] = [];
  const exporters: string[] = [];
  for (const name of tracesExporters(env)) {
    if (name === 'otlp') {
      const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
      if (protocol === 'grpc') {
        log?.warn('OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported by this build: traces go over HTTP (http/json) instead.');
      }
      const url = otlpTracesUrl(env);
      processors.push(new BatchSpanProcessor(new OTLPTraceExporter(url ? { url } : {})));
    } else if (name === 'console') {
      processors.push(new SimpleSpanProcessor(new ConsoleSpanExporter()));
    } else {
      log?.warn({ exporter: name }, `OTEL_TRACES_EXPORTER "${name}" is not available in this build (use otlp or console); ignored.`);
      continue;
    }
    exporters.push(name);
  }
  if (processors.length === 0) return undefined;
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'durable-agents' }))
    // The env detector reads the process environment, so the values given here go on top of it.
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(resourceFromAttributes(env.OTEL_SERVICE_NAME ? { [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME } : {}));
  const provider = new BasicTracerProvider({ resource, spanProcessors: processors });
  return {
    provider,
    tracer: provider.getTracer(TRACER_NAME),
    exporters,
    shutdown: () => provider.shutdown(),
  };
}

/** The spec's rule: the traces endpoint as given, or the base endpoint with `/v1/traces` appended. */
function otlpTracesUrl(env: NodeJS.ProcessEnv): string | undefined {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined;
}

import { trace } from '@opentelemetry/api';
import type { InspectionEvent } from 'xstate';
import type { RuntimeObserver } from '../runtime/observer.js';
import { combineObservers } from './combine-observers.js';
import type { InspectorHandle } from './inspector.js';
import type { Logger } from '../core/logger.js';
import { createMetrics, type Metrics } from './metrics.js';
import { tracesExporters } from './otel-env.js';
import type { Tracing } from './otel.js';
import { createTracingObserver } from './tracing.js';
import type { EffectLookup } from './tool-calls.js';

/** How long shutdown waits for the last spans to reach the collector (its exporter retries for ~10 s). */
const TRACE_FLUSH_MS = 2_000;

/** What `serve` watches itself with: metrics always, traces when OTEL_* asks, the inspector with --inspect. */
export interface ServiceObservability {
  readonly metrics: Metrics;
  /** For `createRuntime({ observer })`. */
  readonly observer: RuntimeObserver;
  /** For `createRuntime({ inspect })`, when the inspector is on. */
  readonly inspect: ((event: InspectionEvent) => void) | undefined;
  /** Says where to look, once the server listens. */
  announce(): void;
  close(): Promise<void>;
}

export async function startObservability({
  inspectPort,
  env,
  log,
  effects,
}: {
  inspectPort: number | undefined;
  env: NodeJS.ProcessEnv;
  log: Logger;
  /** The store, so that a tool batch that failed transiently counts only its calls without a recorded result as failed. */
  effects?: EffectLookup;
}): Promise<ServiceObservability> {
  const metrics = createMetrics({ effects });
  const tracing = await startTracing(env, log);
  const inspector = inspectPort === undefined ? undefined : await startInspectorOrSayWhy(inspectPort, log);
  return {
    metrics,
    observer: combineObservers(metrics.observer, tracing && createTracingObserver(tracing.tracer, { effects })),
    inspect: inspector?.inspect,
    announce() {
      if (!inspector) return;
      log.info(
        { inspector: inspector.url },
        `Stately inspector: open ${inspector.url} in a browser on this machine (over SSH: forward port ${inspectPort}). ` +
          "That page embeds Stately's web app (stately.ai/inspect), so the browser needs internet access; " +
          'agent contexts reach it with secrets (apiKey, token, password…) redacted.',
      );
    },
    async close() {
      await inspector?.close();
      if (!tracing) return;
      // A collector that is down must neither fail a clean shutdown nor hold it up.
      let timer: NodeJS.Timeout | undefined;
      const gaveUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, TRACE_FLUSH_MS)));
      await Promise.race([tracing.shutdown().catch((err: unknown) => log.warn({ err }, 'could not send the last spans')), gaveUp]);
      clearTimeout(timer);
      trace.disable(); // a later service in this process (tests) may register its own
    },
  };
}

/** The OpenTelemetry SDK, registered globally (the HTTP middleware uses the global tracer), when OTEL_* asks. */
async function startTracing(env: NodeJS.ProcessEnv, log: Logger): Promise<Tracing | undefined> {
  // The SDK is loaded only when asked for: it is a fifth of start-up time otherwise wasted.
  if (tracesExporters(env).length === 0) return undefined;
  const { tracingFromEnv } = await import('./otel.js');
  const tracing = tracingFromEnv(env, log);
  if (!tracing) return undefined;
  if (!trace.setGlobalTracerProvider(tracing.provider)) {
    log.warn('another OpenTelemetry tracer provider is already registered in this process; HTTP spans go there');
  }
  log.info({ exporters: tracing.exporters }, `OpenTelemetry traces on (exporters: ${tracing.exporters.join(', ')})`);
  return tracing;
}

/** The inspector is a development aid: when it cannot start, say why and serve without it. */
async function startInspectorOrSayWhy(port: number, log: Logger): Promise<InspectorHandle | undefined> {
  try {
    const { startInspector } = await import('./inspector.js');
    return await startInspector({ port, log });
  } catch (err) {
    log.error({ err }, `${(err as Error).message} Serving without the inspector.`);
    return undefined;
  }
}

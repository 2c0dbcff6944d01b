// Kept apart from otel.ts so that deciding whether tracing is on does not load the OpenTelemetry
// SDK and exporter (≈ 200 ms at start-up) when it is off.

/** The exporters the variables ask for; empty means tracing stays off. */
export function tracesExporters(env: NodeJS.ProcessEnv): string[] {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return [];
  const listed = env.OTEL_TRACES_EXPORTER?.split(',').map((e) => e.trim().toLowerCase()).filter(Boolean);
  if (listed?.length) return listed.includes('none') ? [] : [...new Set(listed)];
  // The spec's default exporter is otlp, but sending to localhost:4318 unasked would surprise:
  // an endpoint variable is the ask.
  return env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ? ['otlp'] : [];
}

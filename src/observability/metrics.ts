import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { AGENT_STATUSES } from '../store/store.js';
import type { RuntimeObserver } from '../runtime/observer.js';
import { createRuntimeMetrics, type RuntimeMetricsOptions } from './runtime-metrics.js';

/** What the HTTP layer reports. */
export interface HttpMetrics {
  observeRequest(method: string, route: string, status: number, seconds: number): void;
}

export interface Metrics extends HttpMetrics {
  readonly registry: Registry;
  readonly agentsSpawned: Counter<'machine'>;
  readonly eventsAccepted: Counter<'type'>;
  /** Pass to `createRuntime({ observer })`: transitions, commits, LLM calls, effects, failures (registered on first read). */
  readonly observer: RuntimeObserver;
  /** Adds the gauges read from the runtime at each scrape (agents by status, live agents and live agents by top-level state, inbox depth). Once per registry. */
  observeRuntime(runtime: ObservedRuntime): void;
  /** The Prometheus text exposition. */
  render(): Promise<string>;
  readonly contentType: string;
}

/** The part of `Runtime` the gauges read, once per scrape. */
export interface ObservedRuntime {
  stats(): Promise<{ agentsByStatus: Record<string, number>; liveByState: Record<string, number>; inboxDepth: number; live: number }>;
  storeBytes(): Promise<number>;
  /** Open `GET /agents/:id/stream` clients, and the characters of LLM text kept for them. */
  streams(): { clients: number; heldChars: number };
  /** Whether the store takes writes, and the agents' writes held meanwhile (absent: the gauges stay unset). */
  storeReadiness?(): { ready: boolean; heldWrites: number };
  /** The LLM gate (absent or undefined: no gate, the gauges stay unset). */
  readonly llmGate?: { readonly queueDepth: number; readonly inFlight: number; readonly limit: number; readonly throttled: number } | undefined;
  /** The tools' concurrency limits (absent: the tool gauges stay unset). */
  readonly toolLimits?: { loads(): { tool: string; waiting: number; inFlight: number }[] };
}

/**
 * A registry of its own (never prom-client's global one, so tests can build many servers) with
 * the default process metrics, the HTTP metrics, the gauges read from the runtime at each scrape,
 * and the counters fed by the runtime observer (runtime-metrics.ts). Names start with `durable_agents_`.
 */
export function createMetrics(options: RuntimeMetricsOptions = {}): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'durable_agents_' });

  const httpRequests = new Counter({
    name: 'durable_agents_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: 'durable_agents_http_request_duration_seconds',
    help: 'Time to the response headers, by method and route pattern',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const agentsSpawned = new Counter({
    name: 'durable_agents_agents_spawned_total',
    help: 'Agents created through the API (an idempotent re-spawn is not counted)',
    labelNames: ['machine'] as const,
    registers: [registry],
  });
  const eventsAccepted = new Counter({
    name: 'durable_agents_events_accepted_total',
    help: 'Events committed to an inbox through the API (an idempotent replay is not counted)',
    labelNames: ['type'] as const,
    registers: [registry],
  });

  let refresh = async () => {};
  // Registered when first asked for: a registry whose observer no runtime was given would export
  // transition, LLM and effect counters that never move.
  let runtimeMetrics: RuntimeObserver | undefined;

  return {
    registry,
    agentsSpawned,
    eventsAccepted,
    get observer() {
      return (runtimeMetrics ??= createRuntimeMetrics(registry, options));
    },
    contentType: registry.contentType,
    observeRequest(method, route, status, seconds) {
      httpRequests.inc({ method, route, status: String(status) });
      httpDuration.observe({ method, route }, seconds);
    },
    observeRuntime(runtime) {
      const agents = new Gauge({
        name: 'durable_agents_agents',
        help: 'Agents in the store, by status',
        labelNames: ['status'] as const,
        registers: [registry],
      });
      const live = new Gauge({ name: 'durable_agents_live_agents', help: 'Agents running in this process', registers: [registry] });
      const inbox = new Gauge({
        name: 'durable_agents_inbox_depth',
        help: 'Events accepted (202) but not yet consumed by their agent',
        registers: [registry],
      });
      const liveByState = new Gauge({
        name: 'durable_agents_live_agents_by_state',
        help: 'Agents running in this process, by top-level state of their last committed checkpoint',
        labelNames: ['state'] as const,
        registers: [registry],
      });
      const storeBytes = new Gauge({
        name: 'durable_agents_store_bytes',
        help: 'What the store takes on disk (SQLite: pages in use; Postgres: its tables and indexes)',
        registers: [registry],
      });
      const streamClients = new Gauge({ name: 'durable_agents_stream_clients', help: 'Open agent streams (GET /agents/:id/stream) in this process', registers: [registry] });
      const streamText = new Gauge({
        name: 'durable_agents_stream_text_chars',
        help: 'Characters of streamed LLM text this process keeps for its streams (bounded: docs/http-api.md)',
        registers: [registry],
      });
      const storeReady = new Gauge({
        name: 'durable_agents_store_ready',
        help: 'Whether the store takes writes (1) or not (0: disk full, file read-only or gone, database out of reach; GET /readyz says why)',
        registers: [registry],
      });
      const heldWrites = new Gauge({
        name: 'durable_agents_held_writes',
        help: "Agents' writes held in memory while the store takes none, committed once it does",
        registers: [registry],
      });
      const llmQueue = new Gauge({
        name: 'durable_agents_llm_queue_depth',
        help: "LLM calls waiting at this process's LLM gate for capacity (their agents are waiting, not failing)",
        registers: [registry],
      });
      const llmInFlight = new Gauge({ name: 'durable_agents_llm_in_flight', help: 'LLM calls running now in this process', registers: [registry] });
      const llmLimit = new Gauge({
        name: 'durable_agents_llm_concurrency_limit',
        help: "The LLM gate's concurrency limit now: --llm-concurrency, lowered while the provider answers 429",
        registers: [registry],
      });
      const llmThrottled = new Counter({
        name: 'durable_agents_llm_throttled_total',
        help: 'LLM calls the provider refused for its rate (429), each asked again after its Retry-After',
        registers: [registry],
      });
      const toolQueue = new Gauge({
        name: 'durable_agents_tool_queue_depth',
        help: "Calls of a tool waiting for room under its concurrency limit in this process (their agents are waiting, not failing)",
        labelNames: ['tool'] as const,
        registers: [registry],
      });
      const toolInFlight = new Gauge({
        name: 'durable_agents_tool_in_flight',
        help: 'Calls of a tool with a concurrency limit running now in this process',
        labelNames: ['tool'] as const,
        registers: [registry],
      });
      const seenTools = new Set<string>();
      let throttledSeen = 0;
      const seenStates = new Set<string>();
      refresh = async () => {
        // First, and from memory: the scrape's store reads below fail while the store is unreachable.
        const readiness = runtime.storeReadiness?.();
        if (readiness) {
          storeReady.set(readiness.ready ? 1 : 0);
          heldWrites.set(readiness.heldWrites);
        }
        const gate = runtime.llmGate;
        if (gate) {
          llmQueue.set(gate.queueDepth);
          llmInFlight.set(gate.inFlight);
          llmLimit.set(gate.limit);
          llmThrottled.inc(gate.throttled - throttledSeen);
          throttledSeen = gate.throttled;
        }
        if (runtime.toolLimits) {
          // A tool with nothing waiting or running any more must read 0, not keep its last value.
          const loads = new Map(runtime.toolLimits.loads().map((l) => [l.tool, l]));
          for (const tool of loads.keys()) seenTools.add(tool);
          for (const tool of seenTools) {
            toolQueue.set({ tool }, loads.get(tool)?.waiting ?? 0);
            toolInFlight.set({ tool }, loads.get(tool)?.inFlight ?? 0);
          }
        }
        const [stats, bytes] = await Promise.all([runtime.stats(), runtime.storeBytes()]);
        for (const status of AGENT_STATUSES) agents.set({ status }, stats.agentsByStatus[status] ?? 0);
        live.set(stats.live);
        // A state no agent is in any more must read 0, not keep its last count.
        const byState = stats.liveByState;
        for (const state of Object.keys(byState)) seenStates.add(state);
        for (const state of seenStates) liveByState.set({ state }, byState[state] ?? 0);
        inbox.set(stats.inboxDepth);
        storeBytes.set(bytes);
        const streams = runtime.streams();
        streamClients.set(streams.clients);
        streamText.set(streams.heldChars);
      };
    },
    async render() {
      await refresh();
      return registry.metrics();
    },
  };
}

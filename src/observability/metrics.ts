import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { AGENT_STATUSES, type Store } from '../persistence/store.js';

/** What the HTTP layer reports. */
export interface HttpMetrics {
  observeRequest(method: string, route: string, status: number, seconds: number): void;
}

export interface Metrics extends HttpMetrics {
  readonly registry: Registry;
  readonly agentsSpawned: Counter<'machine'>;
  readonly eventsAccepted: Counter<'type'>;
  /** Adds the gauges read from a runtime at scrape time (agents by status, live agents). */
  observeRuntime(runtime: ObservedRuntime): void;
  /** The Prometheus text exposition. */
  render(): Promise<string>;
  readonly contentType: string;
}

/** The part of `Runtime` the gauges read. */
export interface ObservedRuntime {
  readonly store: Pick<Store, 'listAgents'>;
  readonly liveAgents: number;
}

const PAGE = 1000;

/**
 * A registry of its own (never prom-client's global one, so tests can build many servers) with
 * the default process metrics and the first runtime metrics. Names start with `durable_agents_`.
 */
export function createMetrics({ defaultMetrics = true }: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'durable_agents_' });

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

  return {
    registry,
    agentsSpawned,
    eventsAccepted,
    contentType: registry.contentType,
    observeRequest(method, route, status, seconds) {
      httpRequests.inc({ method, route, status: String(status) });
      httpDuration.observe({ method, route }, seconds);
    },
    observeRuntime(runtime) {
      new Gauge({
        name: 'durable_agents_agents',
        help: 'Agents in the store, by status',
        labelNames: ['status'] as const,
        registers: [registry],
        async collect() {
          for (const status of AGENT_STATUSES) this.set({ status }, await countAgents(runtime.store, status));
        },
      });
      new Gauge({
        name: 'durable_agents_live_agents',
        help: 'Agents running in this process',
        registers: [registry],
        collect() {
          this.set(runtime.liveAgents);
        },
      });
    },
    render: () => registry.metrics(),
  };
}

/**
 * Pages through the store: O(agents) per scrape. Good enough for one SQLite file; a store-side
 * count (`Store.countAgents`) is the fix when agents number in the hundreds of thousands.
 */
async function countAgents(store: Pick<Store, 'listAgents'>, status: (typeof AGENT_STATUSES)[number]): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  do {
    const page = await store.listAgents({ status, limit: PAGE, ...(cursor ? { cursor } : {}) });
    count += page.items.length;
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return count;
}

import { StepError } from '../core/errors.js';
import { nextRandom } from '../core/random.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LlmClient, LlmRequest } from './client.js';

export interface SimulatedLlmOptions {
  /** Share of calls that fail with a transient error (0–1). */
  faultRate?: number;
  /** Seed for the faults, so a run can be reproduced. */
  seed?: number;
  latencyMs?: number;
}

/** The embedded default when no API is configured: deterministic text, optional seeded faults. */
export function createSimulatedLlm(options: SimulatedLlmOptions = {}): LlmClient {
  const faultRate = options.faultRate ?? 0;
  const latencyMs = options.latencyMs ?? 0;
  let rng = options.seed ?? 1;
  return {
    kind: 'simulated',
    description: `simulated LLM (no OPENAI_API_KEY/OPENAI_BASE_URL set; fault rate ${faultRate})`,
    async complete(request: LlmRequest, signal: AbortSignal): Promise<string> {
      if (latencyMs > 0) await sleep(latencyMs, undefined, { signal });
      signal.throwIfAborted();
      if (faultRate > 0) {
        const draw = nextRandom(rng);
        rng = draw.state;
        if (draw.value < faultRate) {
          throw new StepError('transient', 'llm_unavailable', 'The simulated LLM failed on purpose (fault rate).', { status: 503 });
        }
      }
      return `Simulated answer (${request.model}) to: ${request.task}`;
    },
  };
}

/**
 * `overload`: a burst of agents against a rate-limited provider. 300 agents × 3 tasks (one in the
 * spawn, two sent as events) through the HTTP app, the real `openai` client, and the fake OpenAI
 * server with a fixed capacity: 8 calls at a time, 200 ms each (40 calls/s), `429` with
 * `Retry-After: 1` beyond that. Reports whether every task finished unattended, the calls the
 * provider refused, the peak of calls in flight, the time to finish against what the capacity
 * allows, how evenly agents were served, and the p99 of the 201/202 answers.
 */
import path from 'node:path';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createServer } from '../../src/http/app.js';
import { createOpenAiClient } from '../../src/llm/openai-client.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { startFakeOpenAI } from '../../test/support/fake-openai.js';
import { median, report, round, sized, tempFile } from '../lib.js';

const AGENTS = sized('OVERLOAD_AGENTS', 300, 12);
const TASKS = 3;
const CAPACITY = 8;
const LATENCY_MS = sized('OVERLOAD_LATENCY_MS', 200, 20);
/** Past this, the run is reported as it stands (the goal is far below it). */
const DEADLINE_MS = sized(undefined, 180_000, 30_000);

const fake = await startFakeOpenAI({ latencyMs: LATENCY_MS, capacity: { concurrent: CAPACITY, retryAfter: '1' } });
const store = await openSqliteStore(path.resolve(tempFile()), { synchronous: 'normal' });
const runtime = await createRuntime({
  store,
  machines: [agentDefinition({ llm: createOpenAiClient({ baseURL: fake.url, apiKey: 'bench' }) })],
});
const app = createServer({ runtime });

const answerMs: number[] = [];
async function post(route: string, body: unknown): Promise<void> {
  const started = performance.now();
  const res = await app.request(route, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  answerMs.push(performance.now() - started);
  if (res.status !== 201 && res.status !== 202) throw new Error(`${route} answered ${res.status}: ${await res.text()}`);
}

const ids = Array.from({ length: AGENTS }, (_, i) => `burst-${i}`);
const started = performance.now();
// The burst: every agent and its tasks at once, as clients would send them.
await Promise.all(
  ids.map(async (id) => {
    await post('/agents', { machine: 'agent', id, input: { tasks: [`first task of ${id}`] } });
    for (let t = 2; t <= TASKS; t++) await post(`/agents/${id}/events`, { type: 'task.add', task: `task ${t} of ${id}` });
  }),
);

const finishedAt = new Map<string, number>();
let failed = 0;
while (finishedAt.size + failed < AGENTS && performance.now() - started < DEADLINE_MS) {
  failed = 0;
  for (const id of ids) {
    if (finishedAt.has(id)) continue;
    const view = await runtime.view(id);
    if (view.state === 'failed') failed++;
    else if (view.progress >= TASKS && view.state === 'idle') finishedAt.set(id, performance.now() - started);
  }
  await new Promise((resolve) => setTimeout(resolve, 50));
}
const elapsedMs = performance.now() - started;
const load = fake.load;
const answered = fake.calls.filter((c) => c.outcome === 'ok').length;
await runtime.close();
await fake.close();

const tasks = AGENTS * TASKS;
const tasksDone = [...finishedAt.keys()].length * TASKS;
// What the provider's capacity allows: every answered call, CAPACITY at a time, LATENCY_MS each.
const lowerBoundMs = (answered / CAPACITY) * LATENCY_MS;
const finishTimes = [...finishedAt.values()];
answerMs.sort((a, b) => a - b);
report({
  tasks,
  tasksDoneUnattended: tasksDone,
  agentsFailed: failed,
  llmCalls: answered + load.refused,
  refusedCalls: load.refused,
  refusedShare: round(load.refused / Math.max(1, answered + load.refused), 3),
  refusedPerTask: round(load.refused / tasks, 3),
  peakConcurrentCalls: load.peak,
  capacity: CAPACITY,
  finishSec: round(elapsedMs / 1000),
  capacityBoundSec: round(lowerBoundMs / 1000),
  finishOverBound: round(elapsedMs / lowerBoundMs),
  slowestOverMedianWait: finishTimes.length > 0 ? round(Math.max(...finishTimes) / median(finishTimes)) : 0,
  answerP99Ms: round(answerMs[Math.min(answerMs.length - 1, Math.floor(answerMs.length * 0.99))] ?? 0),
});
// A run that left tasks undone, or went past the provider's capacity, measured a broken gate.
if (tasksDone < tasks) throw new Error(`${tasks - tasksDone} of ${tasks} tasks were not done unattended (${failed} agents in failed)`);
if (load.peak > CAPACITY) throw new Error(`${load.peak} calls were answered at once, past the capacity of ${CAPACITY}`);

/**
 * `npm run bench [-- --json] [-- --only NAME] [-- --tiny]`: every workload in a fresh process, each
 * figure measured beside its baseline in the same run and reported as a ratio (these machines are
 * noisy). `--tiny`: every workload at a size that only shows it runs end to end and reports its
 * figures, in well under a minute in all (test/bench runs it); tiny figures measure nothing.
 *
 * A workload that fails is reported with why (its exit code or signal; its own stderr comes
 * through as it runs), the others still run, and the runner exits 1.
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

interface Step {
  script: string;
  args?: string[];
  gc?: boolean;
  /** Prefix for the step's figures inside its workload (for workloads made of several runs). */
  as?: string;
}

const WORKLOADS: Record<string, { what: string; goal: string; steps: Step[] }> = {
  throughput: {
    what: 'agent loop (200 agents × 10 tasks), synchronous=NORMAL, vs raw 1-row INSERTs',
    goal: 'ratio ≥ 0.6',
    steps: [{ script: 'throughput.ts', args: ['normal'] }],
  },
  durable: {
    what: 'the same at synchronous=FULL (fsync per commit) vs raw 1-row FULL INSERTs',
    goal: 'ratio ≥ 3.0',
    steps: [{ script: 'throughput.ts', args: ['full'] }],
  },
  overhead: {
    what: 'the same loop on SQLite vs on the in-memory store',
    goal: 'ratio ≥ 0.7',
    steps: [{ script: 'overhead.ts', args: ['normal'] }],
  },
  tools: {
    what: 'tool-calling loop (200 agents × 10 tasks, two parallel HTTP tool calls per task, local tool server) vs the plain agent loop, synchronous=NORMAL',
    goal: 'ratio ≥ 0.8 (checkpoints/s)',
    steps: [{ script: 'tools.ts' }],
  },
  'tools-mcp': {
    what: 'the same tool loop with one of its two tools an MCP tool (server-everything, stdio) beside an HTTP tool, vs both tools HTTP, synchronous=NORMAL',
    goal: 'ratio ≥ 0.8 (tasks/s, vs HTTP only)',
    steps: [{ script: 'tools-mcp.ts' }],
  },
  recovery: {
    what: '10,000 agents SIGKILLed mid-task: restore until all run again, vs a scan of the same agents through the store (their snapshots put back together from parts, JSON-parsed)',
    goal: 'ratio ≤ 3, ms < 1000',
    steps: [{ script: 'recovery.ts', gc: true }],
  },
  http: {
    what: 'POST /agents/:id/events (202 after commit), synchronous=FULL, vs a bare Hono 202 route, autocannon',
    goal: 'ratio ≥ 0.5',
    steps: [{ script: 'http.ts' }],
  },
  postgres: {
    what: 'agent loop (200 agents × 10 tasks) on the Postgres store vs raw pg 1-row autocommit INSERTs',
    goal: 'ratio ≥ 3.0 (as durable: group commit beats one commit per row)',
    steps: [{ script: 'postgres.ts' }],
  },
  history: {
    what: 'one agent, memory: conversation, 200 tasks of ~1 KB answers and a tool result each: bytes written per checkpoint as the conversation grows, store size over transcript size, restore time',
    goal: 'bytesAt200 ≤ 1.5 × bytesAt10; storedOverTranscript ≤ 3; restoreMs ≤ 10',
    steps: [{ script: 'history.ts' }],
  },
  memory: {
    what: 'RSS per live agent (10,000 live); RSS with 100,000 passivated agents on disk vs 1,000',
    goal: '≤ 10 KB per live agent; passivatedRssRatio ≈ 1',
    steps: [
      { script: 'memory.ts', args: ['live'], gc: true },
      { script: 'memory.ts', args: ['passivation-small'], gc: true, as: 'small' },
      { script: 'memory.ts', args: ['passivation-large'], gc: true, as: 'large' },
    ],
  },
  overload: {
    what: '300 agents × 3 tasks at once against a rate-limited provider (the fake OpenAI server: 8 calls at a time, 200 ms each, 429 with Retry-After: 1 beyond), through the HTTP app and the real openai client',
    goal: 'every task done unattended; refusedShare ≤ 0.05; peakConcurrentCalls ≤ capacity; finishOverBound ≤ 1.5; slowestOverMedianWait ≤ 3',
    steps: [{ script: 'overload.ts' }],
  },
  stream: {
    what: '100 LLM streams (fake OpenAI server in a child, 300 tokens at 1 per 20 ms each) relayed by GET /agents/:id/stream to 100 SSE clients (another child) vs the same clients reading the fake directly, and vs a bare node:http relay; then the fake as fast as it can',
    goal: 'addedP99Ms ≤ 2; tokensPerSec ≥ 100,000; rssMb bounded',
    steps: [{ script: 'stream.ts', gc: true }],
  },
};

const { values } = parseArgs({ options: { json: { type: 'boolean' }, only: { type: 'string' }, tiny: { type: 'boolean' } } });
const names = values.only ? values.only.split(',') : Object.keys(WORKLOADS);
for (const name of names) if (!WORKLOADS[name]) throw new Error(`Unknown workload "${name}"; known: ${Object.keys(WORKLOADS).join(', ')}`);

/** The workloads' sizes: `BENCH_TINY=1` makes each one take its tiny sizes (bench/lib.ts, `sized`). */
const env = { ...process.env, LOG_LEVEL: 'silent', ...(values.tiny ? { BENCH_TINY: '1' } : {}) };
/**
 * A tiny step that runs this long is stuck (the slowest takes seconds): it is killed, so that a
 * hung workload fails `npm test` instead of hanging it. Full runs take minutes and have no limit.
 */
const TINY_STEP_TIMEOUT_MS = 120_000;

const results: Record<string, Record<string, number | string>> = {};
const failed: Record<string, string> = {};
for (const name of names) {
  try {
    results[name] = runWorkload(name);
    if (!values.json) process.stderr.write(`${name}: ${JSON.stringify(results[name])}\n`);
  } catch (err) {
    failed[name] = (err as Error).message;
    process.stderr.write(`${name}: FAILED: ${failed[name]}\n`);
  }
}

function runWorkload(name: string): Record<string, number | string> {
  const figures: Record<string, number | string> = {};
  for (const step of WORKLOADS[name]!.steps) {
    const args = [...(step.gc ? ['--expose-gc'] : []), '--import', 'tsx', path.join(import.meta.dirname, 'workloads', step.script), ...(step.args ?? [])];
    let out: string;
    try {
      out = execFileSync(process.execPath, args, {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
        env,
        maxBuffer: 1 << 26,
        ...(values.tiny ? { timeout: TINY_STEP_TIMEOUT_MS, killSignal: 'SIGKILL' } : {}),
      });
    } catch (err) {
      throw new Error(`${[step.script, ...(step.args ?? [])].join(' ')}: ${howItEnded(err as { status: number | null; signal: string | null })}`, { cause: err });
    }
    const last = out.trim().split('\n').at(-1) ?? '';
    let reported: Record<string, number | string>;
    try {
      reported = JSON.parse(last) as Record<string, number | string>;
    } catch {
      throw new Error(`${step.script} printed no figures (its last line: ${JSON.stringify(last.slice(0, 200))})`);
    }
    for (const [key, value] of Object.entries(reported)) {
      figures[step.as ? `${step.as}${key[0]!.toUpperCase()}${key.slice(1)}` : key] = value;
    }
  }
  if (name === 'memory') {
    figures.passivatedRssMb = figures.largeRssMb!;
    figures.passivatedRssRatio = Number((Number(figures.largeRssMb) / Number(figures.smallRssMb)).toFixed(2));
  }
  return figures;
}

/** Why a workload's process ended without its figures, in words (Node's exit codes say little by themselves). */
function howItEnded({ status, signal }: { status: number | null; signal: string | null }): string {
  if (signal === 'SIGKILL' && values.tiny) return `killed after ${TINY_STEP_TIMEOUT_MS / 1000} s (stuck)`;
  if (signal) return `killed by ${signal}`;
  // 13: Node's "unsettled top-level await": the process had nothing left to do while still awaiting.
  if (status === 13) return 'exit 13: a top-level await never settled (it awaited something that nothing was left to bring)';
  return `exit ${status}`;
}

if (values.json) {
  // Nested ({"throughput":{"ratio":…}}) and flat ("throughput.ratio") keys, so either lookup works.
  const flat = Object.fromEntries(Object.entries(results).flatMap(([w, f]) => Object.entries(f).map(([k, v]) => [`${w}.${k}`, v])));
  const sizes = values.tiny ? 'tiny' : 'full';
  const failures = Object.keys(failed).length ? { failed } : {};
  process.stdout.write(`${JSON.stringify({ ...results, ...flat, ...failures, sizes, machine: machine() }, null, 2)}\n`);
} else {
  const lines = [`Machine: ${machine()}${values.tiny ? ' (tiny sizes: these figures measure nothing)' : ''}`, '', '| workload | what | goal | figures |', '|---|---|---|---|'];
  for (const [name, figures] of Object.entries(results)) {
    const shown = Object.entries(figures).map(([k, v]) => `${k}=${v}`).join(', ');
    lines.push(`| ${name} | ${WORKLOADS[name]!.what} | ${WORKLOADS[name]!.goal} | ${shown} |`);
  }
  for (const [name, why] of Object.entries(failed)) lines.push(`| ${name} | ${WORKLOADS[name]!.what} | ${WORKLOADS[name]!.goal} | FAILED: ${why} |`);
  process.stdout.write(`${lines.join('\n')}\n`);
}
if (Object.keys(failed).length) process.exitCode = 1;

function machine(): string {
  return `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.platform()}`;
}

/**
 * Every bench workload still runs end to end: `bench/run.ts --tiny --json` (each workload in its
 * own process, at sizes that take seconds), then each workload's figures are checked. Nothing here
 * is timed: a tiny run measures nothing, and speed is the bench's to report, as ratios. What fails
 * here is a workload that no longer completes (a crash, a wait that never ends, figures missing or
 * NaN), which `npm run bench` would otherwise find only when someone runs it.
 *
 * The `postgres` workload runs against this test run's PostgreSQL (`DATABASE_URL`, which the bench
 * reads), and every workload writes its files in this run's temp folder (`TMPDIR`).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { postgresUrl } from '../helpers/postgres.js';
import { tempDir } from '../helpers/temp.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Each workload's headline figures, which must be there as numbers. A workload added to
 * bench/run.ts fails the test below until it is listed here.
 */
const FIGURES: Record<string, readonly (string | RegExp)[]> = {
  throughput: ['ratio', 'checkpointsPerSec', 'tasksPerSec', 'baselinePerSec', 'bytesPerCheckpoint', 'cpuUsPerCheckpoint', 'baselineCpuUsPerRow', 'cpuRatio'],
  durable: ['ratio', 'checkpointsPerSec', 'tasksPerSec', 'baselinePerSec', 'bytesPerCheckpoint', 'cpuUsPerCheckpoint', 'baselineCpuUsPerRow', 'cpuRatio'],
  overhead: ['ratio', 'sqliteCheckpointsPerSec', 'memoryCheckpointsPerSec'],
  tools: ['ratio', 'checkpointsPerSec', 'tasksPerSec', 'plainCheckpointsPerSec', 'tasksRatio', 'checkpointsPerTask', 'cpuUsPerCheckpoint', 'bytesPerCheckpoint'],
  'tools-mcp': ['ratio', 'tasksPerSec', 'httpTasksPerSec', 'checkpointsPerSec', 'checkpointsRatio', 'checkpointsPerTask', 'cpuUsPerTask', 'bytesPerCheckpoint', 'mcpConnections'],
  recovery: ['ratio', 'ms', 'rawScanMs', 'plainXstateMs', 'vsPlainXstate', 'agents'],
  http: ['ratio', 'durableRps', 'bareRps', 'apiNoStoreRps', 'durabilityRatio', 'durableP99Ms', 'bareCpuUs', 'apiCpuUs', 'durableCpuUs', 'cpuRatio'],
  postgres: ['ratio', 'checkpointsPerSec', 'tasksPerSec', 'baselinePerSec', 'cpuUsPerCheckpoint', 'checkpointsPerTransaction', 'roundTripsPerTransaction', 'otherRoundTripsPerCheckpoint'],
  // Bytes per checkpoint early, midway and at the last task: named after those tasks (10, 100 and 200 at full size).
  history: [/^bytesAt\d+$/, 'checkpointsPerTask', 'transcriptBytes', 'storeBytes', 'storedOverTranscript', 'restoreMs'],
  memory: ['bytesPerLiveAgent', 'marginalBytesPerLiveAgent', 'heapBytesPerLiveAgent', 'smallRssMb', 'largeRssMb', 'passivatedRssMb', 'passivatedRssRatio'],
  overload: ['tasks', 'tasksDoneUnattended', 'refusedShare', 'peakConcurrentCalls', 'finishOverBound', 'slowestOverMedianWait', 'answerP99Ms'],
  stream: ['addedP50Ms', 'addedP99Ms', 'tokensPerSec', 'rssMb', 'directP99Ms', 'relayedP99Ms', 'cpuUsPerToken', 'directTokensPerSec', 'bareTokensPerSec'],
};

/** The figures that are words, not measurements: what the run was configured with. */
const WORDS = new Set(['synchronous', 'toolServer']);

type Figures = Record<string, number | string | null>;

interface BenchRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The tiny runs take ~40 s on two idle cores; this is for a loaded machine, and no workload is stuck this long (the runner kills a tiny step after 120 s). */
const RUN_TIMEOUT_MS = 480_000;

function runBench(): Promise<BenchRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', 'run.ts'), '--tiny', '--json'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: postgresUrl, TMPDIR: tempDir('bench-') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

let run: BenchRun;
let report: Record<string, unknown>;

beforeAll(async () => {
  run = await runBench();
  try {
    report = JSON.parse(run.stdout) as Record<string, unknown>;
  } catch {
    throw new Error(`bench/run.ts --tiny --json printed no JSON (exit ${run.code ?? run.signal}).\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`);
  }
}, RUN_TIMEOUT_MS);

/** What to show when a check fails: the runner's and the workloads' own words. */
const context = () => `exit ${run.code ?? run.signal}; failed: ${JSON.stringify(report.failed ?? {})}\nstderr:\n${run.stderr.slice(-8000)}`;

describe('npm run bench -- --tiny', () => {
  it('runs every workload of bench/run.ts, and only those this test knows', () => {
    expect(report.sizes).toBe('tiny');
    // A workload's figures are an object under its name; the flat `name.key` copies and the machine line are not.
    const workloads = Object.keys(report).filter((key) => !key.includes('.') && key !== 'failed' && typeof report[key] === 'object');
    expect(report.failed, context()).toBeUndefined();
    expect(workloads.sort()).toEqual(Object.keys(FIGURES).sort());
    expect(run.code, context()).toBe(0);
  });

  it.each(Object.entries(FIGURES))('%s completes and reports its figures as numbers', (name, expected) => {
    const figures = report[name] as Figures | undefined;
    expect(figures, `${name} reported nothing: ${context()}`).toBeDefined();
    for (const key of expected) {
      const matching = Object.keys(figures!).filter((k) => (typeof key === 'string' ? k === key : key.test(k)));
      expect(matching.length, `${name}.${String(key)} missing from ${JSON.stringify(figures)}`).toBeGreaterThan(0);
    }
    // NaN and ±Infinity become null in JSON: every figure must be a finite number (or one of the words).
    for (const [key, value] of Object.entries(figures!)) {
      if (WORDS.has(key)) expect(typeof value, `${name}.${key}`).toBe('string');
      else expect(Number.isFinite(value), `${name}.${key} is ${JSON.stringify(value)}`).toBe(true);
    }
    // The flat copies a dashboard looks up agree with the nested figures.
    for (const [key, value] of Object.entries(figures!)) expect(report[`${name}.${key}`]).toEqual(value);
  });

  it('reports three bytes-per-checkpoint figures for history, early to last', () => {
    const figures = report.history as Figures;
    const tasks = Object.keys(figures)
      .map((key) => /^bytesAt(\d+)$/.exec(key)?.[1])
      .filter((task) => task !== undefined)
      .map(Number);
    expect(tasks).toHaveLength(3);
    expect(tasks).toEqual([...tasks].sort((a, b) => a - b));
  });
});

/**
 * A case run by the runtime in a child process that is SIGKILLed after every step and in the
 * middle of every wait. The next process is loaded beforehand (a spare, waiting for `go`), so a
 * restore follows the kill within milliseconds and the case's delays keep their meaning.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { build } from 'esbuild';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ConformanceCase } from './case.js';
import { PlanSlip, planOf, sleep, type Observation, type TraceEntry } from './observation.js';
import type { CaseOutcome } from './run-runtime.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const WORKER_SOURCE = path.join(ROOT, 'test/conformance/case-worker.ts');
/** Beside node_modules, so that what the bundle leaves out (the native SQLite driver, pino) resolves. */
const WORKER_BUNDLE = path.join(ROOT, 'node_modules/.cache/durable-agents/conformance-worker.mjs');

let bundled: Promise<string> | undefined;

/**
 * The worker as one JavaScript file, built once per run: a suite kills about a thousand processes,
 * and one that loads a bundle with plain node starts in a third of the time of one that compiles
 * the TypeScript sources through tsx (measured on 2 cores: 0.3 vs 1.0 s under the suite's load).
 */
function workerBundle(): Promise<string> {
  bundled ??= build({
    entryPoints: [WORKER_SOURCE],
    outfile: WORKER_BUNDLE,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // The development build of XState, as the tests use (it checks more).
    conditions: ['development'],
    external: ['better-sqlite3', 'pg', 'pino', 'pino-pretty'],
    // Bundled CommonJS modules call require(): ESM has none of its own.
    banner: { js: "import { createRequire as createRequireForBundle } from 'node:module'; const require = createRequireForBundle(import.meta.url);" },
    logLevel: 'warning',
  }).then(() => WORKER_BUNDLE);
  return bundled;
}

type Message = Record<string, unknown>;

/** One worker process and the replies it owes. */
class Worker {
  readonly child: ChildProcess;
  private readonly waiting: { keys: string[]; resolve: (m: Message) => void }[] = [];
  readonly exited: Promise<NodeJS.Signals | null>;
  private readonly stderr: string[] = [];
  /** It said `ready`: what it traces from then on belongs to the step (before, to its restore). */
  ready = false;

  constructor(bundle: string, c: ConformanceCase, file: string, onMessage: (m: Message, from: Worker) => void) {
    this.child = spawn(process.execPath, [bundle, c.id, file], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.once('close', (_code, signal) => resolve(signal)));
    this.child.stderr!.on('data', (chunk: Buffer) => this.stderr.push(chunk.toString()));
    readline.createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const message = JSON.parse(line) as Message;
      if ('ready' in message) this.ready = true;
      onMessage(message, this);
      const i = this.waiting.findIndex((w) => w.keys.some((key) => key in message));
      if (i >= 0) this.waiting.splice(i, 1)[0]!.resolve(message);
    });
    void this.exited.then(() => {
      for (const w of this.waiting.splice(0)) w.resolve({ crashed: this.stderr.join('') });
    });
  }

  /** Resolves with the next message that has one of `keys`. */
  reply(...keys: string[]): Promise<Message> {
    return new Promise((resolve) => this.waiting.push({ keys, resolve }));
  }

  async request(command: object, ...keys: string[]): Promise<Message> {
    const reply = this.reply(...keys);
    this.child.stdin!.write(`${JSON.stringify(command)}\n`);
    const message = await reply;
    if ('crashed' in message) throw new Error(`the case worker died:\n${String(message.crashed)}`);
    return message;
  }

  /** Has it SIGKILL itself once quiet (see case-worker.ts), and waits for its end. */
  async die(): Promise<void> {
    this.child.stdin!.write(`${JSON.stringify({ op: 'die' })}\n`);
    const signal = await this.exited;
    if (signal !== 'SIGKILL') throw new Error(`the case worker ended by ${signal ?? 'exiting'}, not SIGKILL:\n${this.stderr.join('')}`);
  }

  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
  }
}

/**
 * Runs the case: each step in a new process that restored the agent, the previous one killed; a
 * wait's process killed half-way too. Time is the chart's: it stops from a kill to the next `go`
 * (see case-worker.ts), so each step lasts for the chart what it lasts in XState.
 */
export async function runKilled(
  c: ConformanceCase,
  dir: string,
  options: {
    /**
     * Also kill the process the moment an event is acknowledged (committed to the inbox), before
     * the agent is quiet: its transition may be half done, and is taken again after the restore.
     */
    atAck?: boolean;
  } = {},
): Promise<CaseOutcome & { kills?: number }> {
  const file = path.join(dir, `${c.id}-killed${options.atAck ? '-at-ack' : ''}.db`);
  /** ms of real time during which the case had no process: the chart's clock is behind by this. */
  let offset = 0;
  const chartNow = () => Date.now() - offset;
  const caseStart = chartNow();
  const slip = new PlanSlip();
  const planned = (at: number) => caseStart + at + slip.ms;
  let trace: TraceEntry[] = [];
  const restoreTrace: string[] = [];
  const refusals: string[] = [];
  const onMessage = (m: Message, from: Worker) => {
    if (typeof m.trace === 'string') {
      if (!from.ready) restoreTrace.push(m.trace);
      else trace.push({ entry: m.trace, at: (m.t as number) - caseStart - slip.ms });
    } else if (typeof m.delivered === 'string') {
      slip.delivered(m.delivered, m.t as number);
    }
  };
  const bundle = await workerBundle();
  const load = async () => {
    const worker = new Worker(bundle, c, file, onMessage);
    await worker.reply('loaded');
    return worker;
  };

  let spare = load();
  let current: Worker | undefined;
  let kills = 0;
  /** Kills the running process (if any) and has the loaded spare take over the file. */
  const takeOver = async (abrupt = false): Promise<string[] | undefined> => {
    if (current) {
      await (abrupt ? current.kill() : current.die());
      kills++;
    }
    const stoppedAt = Date.now();
    current = await spare;
    spare = load();
    offset += Date.now() - stoppedAt;
    const ready = await current.request({ op: 'go', offset }, 'ready', 'refused');
    if (typeof ready.offset === 'number') offset = ready.offset;
    return Array.isArray(ready.refused) ? (ready.refused as string[]) : undefined;
  };
  const observations: Observation[] = [];
  const observe = async () => {
    const reply = (await current!.request({ op: 'observe' }, 'observation')) as { observation: Omit<Observation, 'trace'>; offset: number };
    const { observation } = reply;
    offset = reply.offset;
    observations.push({ ...observation, trace });
    trace = [];
  };

  try {
    const refused = await takeOver();
    if (refused) return { refused };
    slip.expect('xstate.init', caseStart);
    await current!.request({ op: 'spawn' }, 'ack');
    await observe();
    const plan = planOf(c.steps);
    for (const [k, step] of c.steps.entries()) {
      await takeOver();
      await sleep(planned(plan[k]!) - chartNow());
      if ('send' in step) {
        slip.expect(step.send.type, chartNow());
        const ack = await current!.request({ op: 'send', event: step.send }, 'ack');
        if (typeof ack.refusal === 'string') {
          slip.cancel();
          refusals.push(ack.refusal);
        }
        if (options.atAck) await takeOver(true);
      } else {
        const until = planned(plan[k + 1]!);
        await sleep((until - chartNow()) / 2);
        await takeOver();
        await sleep(until - chartNow());
      }
      await observe();
    }
  } finally {
    await current?.kill();
    await (await spare).kill();
  }
  return { observations, restoreTrace, refusals, kills };
}

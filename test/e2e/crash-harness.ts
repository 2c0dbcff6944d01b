/**
 * What the crash tests share: the worker process handle, the seeded plan of commands, the fake
 * OpenAI server, the webhook sink and the tool server (in the parent, so their records survive
 * every kill), and the final check of the contract's guarantees against what the store committed.
 * The store itself is reached through `CrashDb`: each test reads its own (SQLite file, Postgres schema).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import type { HttpToolInput } from '../../src/agents/reference/types.js';
import { nextRandom } from '../../src/core/random.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';
import { startWebhookSink, type WebhookSink } from '../support/webhook-sink.js';
import { startCrashTools, toolCallingModel, type CrashTools, type ToolDb } from './crash-tools.js';
import type { WorkerCommand, WorkerMessage } from './crash-worker.js';

export type { WorkerCommand } from './crash-worker.js';

export const SEED = Number(process.env.CRASH_SEED ?? 20261130);
const WORKER = path.join(import.meta.dirname, 'crash-worker.ts');

export function seededRandom(seed: number) {
  let state = seed;
  const next = () => {
    const draw = nextRandom(state);
    state = draw.state;
    return draw.value;
  };
  return { next, int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)) };
}

export type Random = ReturnType<typeof seededRandom>;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `done` every 100 ms until it holds or `timeoutMs` has passed; resolves with whether it held. */
export async function waitFor(done: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await done()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(100);
  }
}

export interface WorkerOptions {
  /** `sqlite:<file>` or `postgres:<url>#<schema>`. */
  store: string;
  llmUrl: string;
  commitDelayMs: number;
  synchronous?: 'full' | 'normal';
  /** Postgres: the lease (ms). */
  leaseMs?: number;
  /** The runtime's log level; its lines land in `Worker.log` (default: silent). */
  logLevel?: string;
}

const started = new Set<Worker>();

/** SIGKILLs every worker still running (a test that failed half-way leaves some). */
export async function killAllWorkers(): Promise<void> {
  await Promise.all([...started].map((w) => w.kill()));
}

/** One crash-worker process. */
export class Worker {
  readonly acks = new Set<number>();
  /** `task.add` commands it found no agent for (sent before the agent's spawn was committed). */
  readonly missing: number[] = [];
  /** The runtime's log lines (only with `logLevel`). */
  readonly log: { msg: string; level: number; name: string }[] = [];
  readonly errors: string[] = [];
  ready = false;
  /** Resolves once it is ready: true, or false when it exited first. */
  readonly whenReady: Promise<boolean>;
  readonly exited: Promise<NodeJS.Signals | number | null>;
  /** Set by `kill`. */
  killed = false;
  private readonly child: ChildProcess;
  /** Resolves once the process has exited and its stdio is closed (its stderr fully read). */
  private readonly closed: Promise<void>;

  /** `onMessage` sees every line it prints, after the fields above are updated. */
  constructor(options: WorkerOptions, onMessage?: (message: WorkerMessage, worker: Worker) => void) {
    const args = [WORKER, '--store', options.store, '--llm', options.llmUrl, '--commit-delay-ms', String(options.commitDelayMs)];
    // The shipped default: synchronous=FULL with group commit.
    args.push('--synchronous', options.synchronous ?? 'full');
    if (options.leaseMs !== undefined) args.push('--lease-ms', String(options.leaseMs));
    if (options.logLevel !== undefined) args.push('--log-level', options.logLevel);
    this.child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, LOG_LEVEL: 'silent' },
    });
    started.add(this);
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve(signal ?? code)));
    let onReady = (_ready: boolean) => {};
    this.whenReady = new Promise((resolve) => (onReady = resolve));
    void this.exited.then(() => onReady(false));
    readline.createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const message = JSON.parse(line) as WorkerMessage;
      if ('ready' in message) (this.ready = true), onReady(true);
      if ('ack' in message) this.acks.add(message.ack);
      if ('missing' in message) this.missing.push(message.missing);
      if ('msg' in message) this.log.push(message);
      onMessage?.(message, this);
    });
    // Whatever a worker wrote to stderr, killed or not (an uncaught error, a warning, a failed
    // start-up): it runs with logs silenced (or on stdout), so anything there is a fault. Collected
    // once the streams are closed, which comes after `exit`.
    let stderr = '';
    this.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    this.closed = new Promise((resolve) =>
      this.child.once('close', () => {
        if (stderr.trim()) this.errors.push(stderr);
        started.delete(this);
        resolve();
      }),
    );
    this.child.stdin!.on('error', () => {}); // writes racing a kill
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  send(command: WorkerCommand): void {
    this.child.stdin!.write(`${JSON.stringify(command)}\n`);
  }

  /** SIGKILL; resolves with whether it landed on a live process (false: the worker had exited on its own). */
  async kill(): Promise<boolean> {
    this.killed = true;
    this.child.kill('SIGKILL');
    const ended = await this.exited;
    await this.closed;
    return ended === 'SIGKILL';
  }
}

export interface RoundPlan {
  /** Commands to send, each at `at` ms into the round. */
  sends: { at: number; command: WorkerCommand }[];
  /** Kill before the worker is ready (during its start-up and recovery). */
  killDuringStartup: boolean;
  /** How long after the round starts (or after the worker is ready) the kill lands. */
  killAfter: number;
  /** The commit delay of the worker started for this round. */
  commitDelayMs: number;
}

/**
 * The commands, planned from the seed alone, not from timing: numbered, spawns and `task.add`s, the
 * adds only to agents spawned in an earlier round.
 */
export class CommandPlan {
  readonly commands: WorkerCommand[] = [];
  private readonly agents: string[] = [];
  private taskNo = 0;

  constructor(
    private readonly schedule: Random,
    private readonly webhook: string,
    private readonly tools: HttpToolInput[],
  ) {}

  round(): RoundPlan {
    const { schedule } = this;
    const known = [...this.agents];
    const sends = Array.from({ length: schedule.int(1, 6) }, () => {
      const n = this.commands.length;
      let command: WorkerCommand;
      if (known.length === 0 || schedule.next() < 0.35) {
        const id = `agent-${this.agents.length}`;
        this.agents.push(id);
        const tasks = Array.from({ length: schedule.int(1, 3) }, () => `task-${this.taskNo++}`);
        command = { n, op: 'spawn', id, webhook: this.webhook, tools: this.tools, tasks };
      } else {
        command = { n, op: 'add', id: known[schedule.int(0, known.length - 1)]!, task: `task-${this.taskNo++}` };
      }
      this.commands.push(command);
      return { at: schedule.int(0, 1200), command };
    });
    // Most kills land while the worker runs agents; some during its start-up and recovery.
    const killDuringStartup = schedule.next() < 0.2;
    return {
      killDuringStartup,
      killAfter: schedule.int(killDuringStartup ? 0 : 50, killDuringStartup ? 800 : 900),
      commitDelayMs: schedule.next() < 0.5 ? 0 : schedule.int(1, 20),
      sends,
    };
  }

  /** Each agent's tasks, in the order it takes them: its spawn's, then those added. */
  expectedTasks(): Map<string, string[]> {
    const expected = new Map<string, string[]>();
    for (const c of this.commands) {
      const list = expected.get(c.id) ?? [];
      if (c.op === 'spawn') list.unshift(...c.tasks);
      else list.push(c.task);
      expected.set(c.id, list);
    }
    return expected;
  }

  get totalTasks(): number {
    return [...this.expectedTasks().values()].reduce((n, list) => n + list.length, 0);
  }
}

/** What the checks read from the store the workers share. */
export interface CrashDb extends ToolDb {
  /**
   * Whether `response` is the answer of a `callLlm` action in one of the agent's committed
   * checkpoints. Synchronous where the store allows (SQLite): it then runs at the very moment the
   * delivery arrives.
   */
  answerCommitted(agentId: string, response: string): boolean | Promise<boolean>;
  /** The sum of the agents' progress (tasks done). */
  progress(): Promise<number>;
  /** Every agent's last committed seq and its checkpoints, in seq order. */
  histories(): Promise<Map<string, { lastSeq: number; checkpoints: { seq: number; progress: number }[] }>>;
}

export interface CrashServices {
  fake: FakeOpenAI;
  sink: WebhookSink;
  tools: CrashTools;
  /** Deliveries whose answer was not in a committed checkpoint when they arrived. */
  uncommittedDeliveries: string[];
  /** Waits for the checks of deliveries made so far (asynchronous on Postgres). */
  deliveryChecks(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The fake LLM (latency and faults from `faults`, tool calls from the seed), the webhook sink and
 * the tool server (latency and 503s from `toolFaults`), which check each delivery against `db`.
 */
export async function startCrashServices(db: CrashDb, faults: Random, toolFaults: Random): Promise<CrashServices> {
  // Every answer is different, as a real model's would be: an effect sent with an answer that was
  // not committed first would later go out again with another body under the same key.
  let answers = 0;
  const fake = await startFakeOpenAI({ answer: (task) => `answer #${++answers} to ${task}` });
  fake.setReplyPolicy(toolCallingModel(SEED, () => ++answers));
  fake.setLatency(() => faults.int(0, 40));
  fake.setFaultPolicy(() => {
    const draw = faults.next();
    if (draw < 0.08) return { kind: 'status', status: 500 };
    if (draw < 0.12) return { kind: 'status', status: 429, retryAfter: '0' };
    return undefined;
  });
  const uncommittedDeliveries: string[] = [];
  const checks: Promise<void>[] = [];
  const sink = await startWebhookSink({
    onDelivery: ({ idempotencyKey, body }) => {
      const { agentId, response } = body as { agentId: string; response: string };
      const flag = (committed: boolean) => {
        if (!committed) uncommittedDeliveries.push(`${idempotencyKey}: ${response}`);
      };
      const committed = db.answerCommitted(agentId, response);
      if (typeof committed === 'boolean') flag(committed);
      else checks.push(committed.then(flag, (err: unknown) => void uncommittedDeliveries.push(`${idempotencyKey}: check failed: ${String(err)}`)));
    },
  });
  const tools = await startCrashTools(db, toolFaults);
  return {
    fake,
    sink,
    tools,
    uncommittedDeliveries,
    deliveryChecks: async () => void (await Promise.all(checks)),
    close: async () => {
      await fake.close();
      await sink.close();
      await tools.close();
    },
  };
}

/**
 * The agent loop of the benchmark issue: 200 agents × 10 tasks through the real runtime, with the
 * simulated LLM answering at once and effects recorded locally, so what is measured is the
 * runtime's own cost: XState, checkpoints, commits. With a tool server, the same loop as a
 * tool-calling one: each task's first answer calls two HTTP tools in parallel, the second is text.
 */
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createSimulatedLlm } from '../src/llm/simulated-client.js';
import { MemoryStore } from '../src/store/memory/memory-store.js';
import { clientConfig } from '../src/store/postgres/connection.js';
import { openPostgresStore } from '../src/store/postgres/postgres-store.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { Store } from '../src/store/store.js';
import { agentDefinition } from '../src/agents/reference/definition.js';
import type { CodeTool } from '../src/agents/reference/tools.js';
import { createRuntime } from '../src/runtime/runtime.js';
import { sized, tempFile, within, writtenBytes } from './lib.js';
import type { BenchToolServer } from './tool-server.js';
import type { McpServers } from '../src/mcp/types.js';

export const AGENTS = sized(undefined, 200, 10);
export const TASKS = sized(undefined, 10, 2);
const TASK_TEXT = (i: number) => `Task ${i}: summarise the attached quarterly figures for the board, in three bullet points, no jargon.`;
/** The two tools of the tool loop: the simulated LLM calls every offered tool its task names. */
export const BENCH_TOOLS = ['lookup_figures', 'convert_currency'] as const;
const TOOL_TASK_TEXT = (i: number) => `Task ${i}: get the quarterly figures with lookup_figures, convert them with convert_currency, summarise for the board.`;
export const TOOL_CALLS_PER_TASK = BENCH_TOOLS.length;
/** The MCP loop's task: the first HTTP tool, and the MCP tool in place of the second. */
const MCP_TASK_TEXT = (i: number, mcpTool: string) => `Task ${i}: get the quarterly figures with lookup_figures, fetch the reference with ${mcpTool}, summarise for the board.`;
/** Minutes beyond the slowest loop seen (the tool loop, ~15 s): past it, an agent is stuck, not slow. */
const LOOP_DEADLINE_MS = 600_000;

/** `DATABASE_URL`, or the machine's PostgreSQL (as the tests use). */
export const POSTGRES_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export type LoopStore = 'sqlite' | 'memory' | 'postgres';

export interface LoopResult {
  checkpoints: number;
  tasks: number;
  ms: number;
  /** Process CPU time (all threads) over the same span: steadier than `ms` when neighbours are noisy. */
  cpuUs: number;
  /** This process's writes: for Postgres, the server writes, so this says nothing there. */
  bytesWritten: number;
  /** Postgres only (0 for the other stores): write transactions committed over the loop… */
  transactions: number;
  /** …the statements sent inside them, `begin` and `commit` included (each one round trip)… */
  transactionStatements: number;
  /** …and every other statement sent meanwhile: spawns, reads, lease ticks. */
  otherStatements: number;
  snapshots: string[];
}

/**
 * The tools of the tool loop: HTTP tools served by a bench tool server, or the same two tools
 * registered in code (no HTTP: what the loop costs without its calls' network round trips).
 */
export type LoopTools = { server: BenchToolServer; mcp?: LoopMcp } | { code: readonly CodeTool[] };

/**
 * With `mcp`, the tool loop's second tool is an MCP server's (`<server>__<tool>`, input `mcp: [server]`)
 * instead of the second HTTP tool: each task calls `lookup_figures` over HTTP and that tool over MCP.
 */
export interface LoopMcp {
  servers: McpServers;
  server: string;
  tool: string;
}

/** `tools`: the tool loop (else the plain loop, no tools). */
export async function runAgentLoop(kind: LoopStore, synchronous: 'normal' | 'full' = 'normal', tools?: LoopTools): Promise<LoopResult> {
  const { store, dispose } = await openLoopStore(kind, synchronous);
  const codeTools = tools && 'code' in tools ? tools.code : [];
  const mcp = tools && 'mcp' in tools ? tools.mcp : undefined;
  // BENCH_LLM_GATE=off runs the loop without the LLM gate: to measure what the gate costs.
  const llmLimits = process.env.BENCH_LLM_GATE === 'off' ? false : undefined;
  const runtime = await createRuntime({
    store,
    machines: [agentDefinition({ llm: createSimulatedLlm(), tools: codeTools, ...(mcp ? { mcp: mcp.servers } : {}) })],
    ...(llmLimits === undefined ? {} : { llmLimits }),
  });
  const tasks = Array.from({ length: TASKS }, (_, i) => (mcp ? MCP_TASK_TEXT(i, `${mcp.server}__${mcp.tool}`) : tools ? TOOL_TASK_TEXT(i) : TASK_TEXT(i)));
  const input = mcp && tools && 'server' in tools
    ? { tasks, tools: [{ name: BENCH_TOOLS[0], url: tools.server.url(BENCH_TOOLS[0]) }], mcp: [mcp.server] }
    : tools && 'server' in tools ? { tasks, tools: BENCH_TOOLS.map((name) => ({ name, url: tools.server.url(name) })) } : { tasks };
  const doneAgents = new Set<string>();
  const allDone = new Promise<void>((resolve) => {
    for (let i = 0; i < AGENTS; i++) {
      runtime.watch(`agent-${i}`, (view) => {
        if (view.progress === TASKS && view.state === 'idle') {
          doneAgents.add(view.id);
          if (doneAgents.size === AGENTS) resolve();
        }
      });
    }
  });
  const bytesBefore = writtenBytes();
  const sentBefore = { ...sent };
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  await Promise.all(Array.from({ length: AGENTS }, (_, i) => runtime.spawn('agent', { id: `agent-${i}`, input })));
  await within(allDone, LOOP_DEADLINE_MS, () => `${doneAgents.size} of ${AGENTS} agents finished their ${TASKS} tasks`);
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const bytesWritten = writtenBytes() - bytesBefore;
  const transactions = sent.commits - sentBefore.commits;
  const transactionStatements = sent.inTransactions - sentBefore.inTransactions;
  const otherStatements = sent.statements - sentBefore.statements - transactionStatements;
  let checkpoints = 0;
  const snapshots: string[] = [];
  for (let i = 0; i < AGENTS; i++) {
    const list = await store.listCheckpoints(`agent-${i}`);
    checkpoints += list.length;
    if (i < 20) for (const c of list) snapshots.push((await store.getCheckpoint(`agent-${i}`, c.seq))!.snapshot);
  }
  await runtime.close();
  await dispose();
  return { checkpoints, tasks: AGENTS * TASKS, ms, cpuUs: cpu.user + cpu.system, bytesWritten, transactions, transactionStatements, otherStatements, snapshots };
}

async function openLoopStore(kind: LoopStore, synchronous: 'normal' | 'full'): Promise<{ store: Store; dispose: () => Promise<void> }> {
  const nothing = async () => undefined;
  if (kind === 'memory') return { store: new MemoryStore(), dispose: nothing };
  if (kind === 'sqlite') return { store: await openSqliteStore(tempFile(), { synchronous }), dispose: nothing };
  countStatements();
  // Default leases and pool; a schema of its own, dropped once the runtime has closed the store.
  const schema = freshSchema();
  return { store: await openPostgresStore(POSTGRES_URL, { schema }), dispose: () => dropSchema(schema) };
}

/** A Postgres store in a schema of its own, and what drops the schema once the store is closed. */
export async function openBenchPostgresStore(): Promise<{ store: Awaited<ReturnType<typeof openPostgresStore>>; dispose: () => Promise<void> }> {
  const schema = freshSchema();
  return { store: await openPostgresStore(POSTGRES_URL, { schema }), dispose: () => dropSchema(schema) };
}

/**
 * Counts every statement any pg client of this process sends (each one is a round trip), those
 * sent inside a transaction (from `begin` to `commit` or `rollback`: the store's commits), and the
 * commits themselves.
 */
const sent = { statements: 0, inTransactions: 0, commits: 0 };
let counting = false;

function countStatements(): void {
  if (counting) return;
  counting = true;
  const inTransaction = new WeakSet<pg.Client>();
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    sent.statements++;
    if (args[0] === 'begin') inTransaction.add(this);
    if (inTransaction.has(this)) sent.inTransactions++;
    if (args[0] === 'commit' || args[0] === 'rollback') inTransaction.delete(this);
    if (args[0] === 'commit') sent.commits++;
    return query.apply(this, args);
  } as typeof pg.Client.prototype.query;
}

function freshSchema(): string {
  return `da_bench_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client(clientConfig(POSTGRES_URL, undefined));
  await client.connect();
  try {
    await client.query(`drop schema if exists ${pg.escapeIdentifier(schema)} cascade`);
  } finally {
    await client.end();
  }
}

/** The storage limit: raw better-sqlite3 INSERTs of the same snapshot bytes, one row per transaction. */
export function rawInserts(
  snapshots: string[],
  rows: number,
  synchronous: 'normal' | 'full',
): { perSec: number; cpuUsPerRow: number; bytesPerRow: number } {
  const db = new Database(tempFile('raw.db'));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
  db.exec('create table checkpoints (agent_id text not null, seq integer not null, snapshot text not null, primary key (agent_id, seq))');
  const insert = db.prepare('insert into checkpoints (agent_id, seq, snapshot) values (?, ?, ?)');
  const bytesBefore = writtenBytes();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  for (let i = 0; i < rows; i++) insert.run(`agent-${i % AGENTS}`, i, snapshots[i % snapshots.length]!);
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const bytes = writtenBytes() - bytesBefore;
  db.close();
  return { perSec: (rows / ms) * 1000, cpuUsPerRow: (cpu.user + cpu.system) / rows, bytesPerRow: bytes / rows };
}

/**
 * The naive way to save every snapshot in Postgres: one autocommitted single-row INSERT each (one
 * round trip, one commit, one WAL flush), on a connection configured as the store's, into a table
 * of the same shape as `rawInserts`' in a schema of its own (dropped after).
 */
export async function rawPostgresInserts(snapshots: string[], rows: number): Promise<{ perSec: number; cpuUsPerRow: number }> {
  const schema = freshSchema();
  const client = new pg.Client(clientConfig(POSTGRES_URL, schema));
  await client.connect();
  try {
    await client.query(`create schema ${pg.escapeIdentifier(schema)}`);
    await client.query('create table checkpoints (agent_id text not null, seq bigint not null, snapshot text not null, primary key (agent_id, seq))');
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    for (let i = 0; i < rows; i++) {
      await client.query('insert into checkpoints (agent_id, seq, snapshot) values ($1, $2, $3)', [`agent-${i % AGENTS}`, i, snapshots[i % snapshots.length]!]);
    }
    const ms = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    return { perSec: (rows / ms) * 1000, cpuUsPerRow: (cpu.user + cpu.system) / rows };
  } finally {
    await client.query(`drop schema ${pg.escapeIdentifier(schema)} cascade`).catch(() => undefined);
    await client.end();
  }
}

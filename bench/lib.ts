import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const tempDirs: string[] = [];
// Workloads write gigabytes of SQLite files (100,000 agents for `memory`): left behind, they filled
// /tmp and their write-back slowed the next run.
process.once('exit', () => tempDirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

/** A file in a fresh temp directory, removed when the process exits. */
export function tempFile(name = 'bench.db'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'da-bench-'));
  tempDirs.push(dir);
  return path.join(dir, name);
}

/** Bytes this process has caused to be written to storage so far (Linux). */
export function writtenBytes(): number {
  const io = fs.readFileSync('/proc/self/io', 'utf8');
  return Number(/write_bytes: (\d+)/.exec(io)?.[1] ?? 0);
}

export const round = (n: number, digits = 2) => Number(n.toFixed(digits));

/** Workloads print one JSON line with their figures; the runner collects them. */
export function report(figures: Record<string, number | string>): void {
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `npm run bench -- --tiny` runs every workload at a size that only shows it still runs end to end
 * and reports its figures (the runner sets `BENCH_TINY=1` for the workloads; test/bench runs it so
 * a broken workload fails `npm test`). Tiny figures measure nothing: compare only full runs.
 */
export const TINY = process.env.BENCH_TINY === '1';

/**
 * A workload's size: the environment variable `name` when set (the knobs the docs name, such as
 * `RECOVERY_AGENTS`), else `tiny` under `--tiny`, else `full`.
 */
export function sized(name: string | undefined, full: number, tiny: number): number {
  const given = name === undefined ? undefined : process.env[name];
  if (given !== undefined && given !== '') {
    const value = Number(given);
    if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number ≥ 0, not ${JSON.stringify(given)}`);
    return value;
  }
  return TINY ? tiny : full;
}

/**
 * `promise`, or a rejection naming `what` once `ms` have passed. A workload that waits for
 * something that never comes must fail saying so: with nothing else pending, Node would otherwise
 * end the process with exit code 13 (a top-level await that never settled) and no word of why.
 */
export async function within<T>(promise: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what()} after ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

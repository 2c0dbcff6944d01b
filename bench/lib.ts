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

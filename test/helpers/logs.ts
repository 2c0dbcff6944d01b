// A pino logger whose JSON lines are parsed into an array, for tests that check what was logged.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger } from '../../src/core/logger.js';

/** A logger at `debug` (every line a test may look for) and every line it wrote, parsed. */
export function captureLogs(): { logger: Logger; logs: Record<string, unknown>[] } {
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), logs };
}

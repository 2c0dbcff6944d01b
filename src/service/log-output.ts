// Where `serve` writes its logs and greeting: JSON lines for machines (a pipe, a file, a log
// collector), readable lines for a person at a terminal.
import { pino } from 'pino';
import { createLogger, lineWriter, type LineOutput, type LogFormat, type Logger } from '../core/logger.js';
import type { Config, LogFormatSetting } from './config.js';
import { logGreeting, printGreeting, type Announce } from './greeting.js';

export type { LogFormat };

/** The part of stdout this file uses; a test passes its own. */
export type Output = LineOutput;

export interface LogOutput {
  format: LogFormat;
  log: Logger;
  /** How the service says it is listening: the JSON line, or the terminal's greeting. */
  announce: Announce;
}

/** `auto` is pretty only on a terminal: whatever reads a pipe expects one JSON object a line. */
export function chooseLogFormat(setting: LogFormatSetting, isTerminal: boolean): LogFormat {
  return setting === 'auto' ? (isTerminal ? 'pretty' : 'json') : setting;
}

export function openLogOutput(config: Config['log'], out: Output = process.stdout): LogOutput {
  const format = chooseLogFormat(config.format, out.isTTY === true);
  if (out === process.stdout) ignoreBrokenPipe(process.stdout);
  if (format === 'json') {
    // On stdout itself, pino's own destination, synchronous (only a test passes `out`). Not pino's
    // default: that one writes asynchronously and flushes on exit, and its flush retries a write
    // that failed with EPIPE (the reader of a pipe is gone, as after `serve | cat` and Ctrl-C)
    // forever, blocking the process inside process.exit() where no signal can reach it. A
    // synchronous write's EPIPE turns pino's destination into a no-op instead.
    const destination = out === process.stdout ? pino.destination({ dest: 1, sync: true }) : lineWriter(out);
    const log = createLogger({ level: config.level, destination });
    return { format, log, announce: logGreeting(log) };
  }
  // hasColors() reads NO_COLOR, FORCE_COLOR and TERM, and is false off a terminal.
  const colors = out.hasColors?.() === true;
  const log = createLogger({ level: config.level, format, destination: out });
  return { format, log, announce: printGreeting((text) => out.write(text), { colors }) };
}

/**
 * A reader of stdout that has gone away (EPIPE: `serve | head`, or `serve | cat` and Ctrl-C) ends
 * the output, not the process; any other error of stdout is thrown as before. Once per stream.
 */
function ignoreBrokenPipe(stream: NodeJS.WriteStream): void {
  if (guarded.has(stream)) return;
  guarded.add(stream);
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}

const guarded = new WeakSet<NodeJS.WriteStream>();

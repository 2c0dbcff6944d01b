// Where `serve` writes its logs and greeting: JSON lines for machines (a pipe, a file, a log
// collector), readable lines for a person at a terminal.
import type { DestinationStream } from 'pino';
import { prettyFactory } from 'pino-pretty';
import { createLogger, type Logger } from '../core/logger.js';
import type { Config, LogFormatSetting } from './config.js';
import { logGreeting, printGreeting, type Announce } from './greeting.js';

export type LogFormat = 'pretty' | 'json';

/** The part of stdout this file uses; a test passes its own. */
export interface Output {
  isTTY?: boolean;
  hasColors?(): boolean;
  write(text: string): unknown;
}

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
  if (format === 'json') {
    // On stdout itself, pino's own destination (as the library's loggers): only a test passes `out`.
    const log = createLogger({ level: config.level, ...(out === process.stdout ? {} : { destination: lineWriter(out, (line) => line) }) });
    return { format, log, announce: logGreeting(log) };
  }
  // hasColors() reads NO_COLOR, FORCE_COLOR and TERM, and is false off a terminal.
  const colors = out.hasColors?.() === true;
  const pretty = prettyFactory({ colorize: colors, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,name', singleLine: true });
  const log = createLogger({ level: config.level, destination: lineWriter(out, pretty) });
  return { format, log, announce: printGreeting((text) => out.write(text), { colors }) };
}

/**
 * A pino destination that writes each line, transformed, straight to `out`: no stream and no
 * worker in between, so log lines and the greeting keep their order, and nothing is still
 * buffered when the process exits right after its last line.
 */
function lineWriter(out: Output, transform: (line: string) => string): DestinationStream {
  return { write: (line: string) => void out.write(transform(line)) };
}

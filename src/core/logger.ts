import { pino, type DestinationStream, type Logger } from 'pino';
import { prettyFactory } from 'pino-pretty';

export type { Logger };

/** pino's levels, loudest first; `silent` writes nothing. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const DEFAULT_LOG_LEVEL: LogLevel = 'info';

/** `json`: one JSON object a line (for machines); `pretty`: a readable line each (for a person). */
export type LogFormat = 'pretty' | 'json';

/** What a log is written to: a terminal, a pipe, a test's buffer. */
export interface LineOutput {
  isTTY?: boolean;
  hasColors?(): boolean;
  write(text: string): unknown;
}

export interface LoggerOptions {
  /** Default `info`. The server takes it from its config (`--log-level` / `LOG_LEVEL`); nothing here reads the environment. */
  level?: string;
  name?: string;
  /** Default `json`. `pretty` is colored when its output is a terminal that has colors. */
  format?: LogFormat;
  /** Where the lines go; default stdout. */
  destination?: DestinationStream | LineOutput;
}

/**
 * A pino logger: JSON lines with ISO timestamps, or readable lines (`format: 'pretty'`).
 *
 * @example
 * const runtime = await createRuntime({ store, machines, logger: createLogger({ level: 'info' }) });
 */
export function createLogger({ level = DEFAULT_LOG_LEVEL, name = 'durable-agents', format = 'json', destination }: LoggerOptions = {}): Logger {
  const options = { name, level, timestamp: pino.stdTimeFunctions.isoTime };
  if (format === 'pretty') {
    const out: LineOutput = destination ?? process.stdout;
    // hasColors() reads NO_COLOR, FORCE_COLOR and TERM, and is false off a terminal.
    return pino(options, lineWriter(out, prettyLines(out.hasColors?.() === true)));
  }
  return destination ? pino(options, destination) : pino(options);
}

/** Turns a JSON log line into the readable one `pretty` writes. */
export function prettyLines(colors: boolean): (line: string) => string {
  return prettyFactory({ colorize: colors, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,name', singleLine: true });
}

/**
 * A pino destination that writes each line, transformed, straight to `out`: no stream and no
 * worker in between, so log lines and what else is written there keep their order, and nothing is
 * still buffered when the process exits right after its last line.
 */
export function lineWriter(out: LineOutput, transform: (line: string) => string = (line) => line): DestinationStream {
  return { write: (line: string) => void out.write(transform(line)) };
}

export const silentLogger: Logger = pino({ level: 'silent' });

import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** pino's levels, loudest first; `silent` writes nothing. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const DEFAULT_LOG_LEVEL: LogLevel = 'info';

export interface LoggerOptions {
  /** Default `info`. The server takes it from its config (`--log-level` / `LOG_LEVEL`); nothing here reads the environment. */
  level?: string;
  name?: string;
  /** Where the JSON lines go; default stdout. */
  destination?: DestinationStream;
}

/** JSON lines with ISO timestamps. */
export function createLogger({ level = DEFAULT_LOG_LEVEL, name = 'durable-agents', destination }: LoggerOptions = {}): Logger {
  const options = { name, level, timestamp: pino.stdTimeFunctions.isoTime };
  return destination ? pino(options, destination) : pino(options);
}

export const silentLogger: Logger = pino({ level: 'silent' });

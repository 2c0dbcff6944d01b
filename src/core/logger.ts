import { pino, type Logger } from 'pino';

export type { Logger };

/** JSON lines on stdout; LOG_LEVEL sets the level (`silent` in tests). */
export function createLogger(options: { level?: string; name?: string } = {}): Logger {
  return pino({
    name: options.name ?? 'durable-agents',
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}

export const silentLogger: Logger = pino({ level: 'silent' });

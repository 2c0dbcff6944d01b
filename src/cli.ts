#!/usr/bin/env node
import { loadConfig, type Config } from './config.js';
import { AgentsError } from './errors.js';
import { main, type Service } from './main.js';
import { createLogger } from './observability/logger.js';

const USAGE = `Usage: durable-agents serve [--port N] [--host H] [--db PATH] [--database-url URL]
                            [--llm-base-url URL] [--llm-api-key KEY] [--model NAME]
                            [--llm-timeout-ms N] [--max-attempts N] [--retry-base-ms N]
                            [--token T] [--lease-ms N] [--synchronous normal|full]
                            [--simulated-fault-rate R]
Every flag also reads its environment variable (see README).`;

async function run(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help') {
    console.log(USAGE);
    return;
  }
  if (command !== 'serve') {
    console.error(command ? `Unknown command "${command}".\n${USAGE}` : USAGE);
    process.exit(2);
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(USAGE);
    return;
  }
  let config: Config;
  try {
    config = loadConfig(rest);
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  const log = createLogger();

  // Signals are handled from the start: one that arrives while recovering still exits cleanly.
  let service: Service | undefined;
  let stopping: string | undefined;
  const shutdown = (signal: string) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = signal;
    log.info({ signal }, 'shutting down: no new requests, committed work stays committed');
    if (service) close(service);
  };
  const close = (s: Service) =>
    s.close().then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'unclean shutdown');
        process.exit(1);
      },
    );
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  service = await main(config, log);
  if (stopping) close(service);
}

run(process.argv.slice(2)).catch((err: unknown) => {
  // Our own errors are sentences for a person; anything else gets its stack.
  if (err instanceof AgentsError) console.error(err.message);
  else if (isAddressInUse(err)) console.error(`Cannot listen: ${err.message}. Pick another --port.`);
  else console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});

function isAddressInUse(err: unknown): err is Error {
  return err instanceof Error && (err as { code?: unknown }).code === 'EADDRINUSE';
}

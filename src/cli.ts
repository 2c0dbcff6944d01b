#!/usr/bin/env node
import { loadConfig } from './config.js';
import { main } from './main.js';
import { createLogger } from './observability/logger.js';

const USAGE = `Usage: durable-agents serve [--port N] [--host H] [--db PATH] [--database-url URL]
                            [--llm-base-url URL] [--llm-api-key KEY] [--model NAME]
                            [--llm-timeout-ms N] [--max-attempts N] [--retry-base-ms N]
                            [--token T] [--lease-ms N] [--synchronous normal|full]
Every flag also reads its environment variable (see README).`;

async function run(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command !== 'serve') {
    console.error(command ? `Unknown command "${command}".\n${USAGE}` : USAGE);
    process.exit(2);
  }
  const log = createLogger();
  let config;
  try {
    config = loadConfig(rest);
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  const service = await main(config, log);
  const shutdown = (signal: string) => {
    log.info({ signal }, 'shutting down: no new requests, committed work stays committed');
    service.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'unclean shutdown');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

run(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});

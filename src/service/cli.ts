#!/usr/bin/env node
// Only light modules are imported statically: the signal handlers below are in place before the
// heavy ones (hono, xstate, openai, better-sqlite3) load, so a SIGTERM at any moment exits 0.
import { DEFAULT_INSPECT_PORT, loadConfig, type Config } from './config.js';
import { AgentsError } from '../core/errors.js';
import type { Service } from './main.js';
import type { Logger } from '../core/logger.js';

const USAGE = `Usage: durable-agents serve [--port N] [--host H] [--db PATH] [--database-url URL]
                            [--llm-base-url URL] [--llm-api-key KEY] [--model NAME]
                            [--llm-timeout-ms N] [--max-attempts N] [--retry-base-ms N]
                            [--token T] [--lease-ms N] [--synchronous normal|full]
                            [--simulated-fault-rate R] [--passivate-after-ms N]
                            [--inspect[=PORT]]
       durable-agents paths <machine> [--format text|json] [--depth N]
Every serve flag also reads its environment variable (see README).
--inspect streams every agent to Stately's inspector (a page on http://localhost:PORT/, default
${DEFAULT_INSPECT_PORT}, that embeds Stately's web app: the browser needs internet).`;

let service: Service | undefined;
let log: Logger | undefined;
let stopping: string | undefined;

function onSignal(signal: string): void {
  if (stopping) {
    log?.warn({ signal }, 'second signal: exiting now');
    process.exit(1);
  }
  stopping = signal;
  log?.info({ signal }, 'shutting down: no new requests, committed work stays committed');
  // Before the service exists nothing is open yet; while it starts, run() closes it once it is up.
  if (service) void close(service);
  else if (!log) process.exit(0);
}

async function close(s: Service): Promise<never> {
  try {
    await s.close();
    log?.info('stopped');
    process.exit(0);
  } catch (err) {
    log?.error({ err }, 'unclean shutdown');
    process.exit(1);
  }
}

async function run(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help' || rest.includes('--help') || rest.includes('-h')) {
    console.log(USAGE);
    return;
  }
  if (command === 'paths') {
    const { runPathsCommand } = await import('./commands/paths.js');
    // exitCode, not exit(): a large listing piped elsewhere must not be cut off.
    process.exitCode = await runPathsCommand(rest, (line) => console.log(line));
    return;
  }
  if (command !== 'serve') {
    console.error(command ? `Unknown command "${command}".\n${USAGE}` : USAGE);
    process.exit(2);
  }
  let config: Config;
  try {
    config = loadConfig(rest);
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  const [{ main }, { createLogger }] = await Promise.all([import('./main.js'), import('../core/logger.js')]);
  if (stopping) process.exit(0);
  log = createLogger();
  service = await main(config, log);
  if (stopping) await close(service);
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

#!/usr/bin/env node
// Nothing heavy is imported statically: `serve` puts its signal handlers in place before the
// config (which reads library defaults) and the service (hono, xstate, openai, better-sqlite3, pg)
// load, so a SIGTERM at any moment exits 0.
import { AgentsError } from '../core/errors.js';
import type { Config } from './config.js';
import type { Service } from './main.js';
import type { Logger } from '../core/logger.js';

async function usage(): Promise<string> {
  return (await import('./usage.js')).usage();
}

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
  if (command === '--help' || command === '-h' || command === 'help' || (command !== 'paths' && command !== 'lint' && (rest.includes('--help') || rest.includes('-h')))) {
    console.log(await usage());
    return;
  }
  if (command === 'paths') {
    const { runPathsCommand } = await import('./commands/paths.js');
    // exitCode, not exit(): a large listing piped elsewhere must not be cut off.
    process.exitCode = await runPathsCommand(rest, (line) => console.log(line));
    return;
  }
  if (command === 'lint') {
    const { runLintCommand } = await import('./commands/lint.js');
    process.exitCode = await runLintCommand(rest, (line) => console.log(line));
    return;
  }
  if (command !== 'serve') {
    console.error(command ? `Unknown command "${command}".\n${await usage()}` : await usage());
    process.exit(2);
  }
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  const { loadConfig } = await import('./config.js');
  let config: Config;
  try {
    config = loadConfig(rest);
  } catch (err) {
    console.error(`${(err as Error).message}\n${await usage()}`);
    process.exit(2);
  }
  const [{ main }, { openLogOutput }] = await Promise.all([import('./main.js'), import('./log-output.js')]);
  if (stopping) process.exit(0);
  const output = openLogOutput(config.log);
  log = output.log;
  service = await main(config, log, process.env, output.announce);
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

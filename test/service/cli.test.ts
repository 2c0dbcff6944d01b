// The real `durable-agents` CLI as a process: refusals and their exit codes, the JSON log lines
// it writes into a pipe, and the greeting it prints on a terminal (a pseudo-terminal made by
// util-linux `script`).
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ROOT } from '../helpers/server-process.js';
import { tempDbFile } from '../helpers/temp.js';

const CLI = [process.execPath, '--conditions=development', '--import', 'tsx', 'src/service/cli.ts'];

/**
 * Every variable the CLI reads, and the colour hints Node's `hasColors()` reads (`CI` alone means "no colours"
 * to it, and CI machines set it), cleared: the flags and `env` given are the whole configuration.
 */
const READ_ENV = [
  'PORT', 'HOST', 'DURABLE_AGENTS_DB', 'DATABASE_URL', 'OPENAI_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_MODEL', 'LLM_TIMEOUT_MS',
  'MAX_ATTEMPTS', 'RETRY_BASE_MS', 'DURABLE_AGENTS_TOKEN', 'LEASE_MS', 'WEBHOOK_TIMEOUT_MS', 'LOG_LEVEL', 'LOG_FORMAT',
  'DURABLE_AGENTS_INSPECT', 'PASSIVATE_AFTER_MS', 'DURABLE_AGENTS_ALLOW_OUTBOUND', 'NO_COLOR', 'FORCE_COLOR',
  'NODE_DISABLE_COLORS', 'CI',
];

function cleanEnv(env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...process.env };
  for (const name of READ_ENV) delete out[name];
  return { ...out, ...env };
}

interface Run {
  child: ChildProcess;
  /** Everything written so far, stdout and stderr. */
  output(): string;
  exit: Promise<number | null>;
}

const started: Run[] = [];
afterEach(async () => {
  for (const run of started.splice(0)) {
    if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
    await run.exit;
  }
});

function start(command: string[], env: NodeJS.ProcessEnv = {}): Run {
  const child = spawn(command[0]!, command.slice(1), { cwd: ROOT, env: cleanEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
  let text = '';
  child.stdout!.on('data', (c: Buffer) => (text += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (text += c.toString()));
  // `close`, not `exit`: the output's last lines may still be in the pipes when the process has exited.
  const exit = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const run = { child, output: () => text, exit };
  started.push(run);
  return run;
}

/** Runs the CLI to its end: its exit code and output. */
async function runCli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const run = start([...CLI, ...args], env);
  const code = await run.exit;
  return { code, output: run.output() };
}

describe('durable-agents (refusals)', () => {
  it('exits 1 with a sentence when the Postgres of --database-url cannot be reached', { timeout: 30_000 }, async () => {
    const { code, output } = await runCli(['serve', '--database-url', 'postgres://postgres@127.0.0.1:1/agents']);
    expect(code).toBe(1);
    expect(output).toContain('Cannot open the store at postgres://postgres@127.0.0.1:1/agents: connect ECONNREFUSED');
    expect(output).not.toMatch(/\bat .+\.ts:\d+/); // a sentence, not a stack trace
  });

  it('refuses unknown flags, bad numbers, an empty token and a bad allow-list with the usage text (exit 2)', { timeout: 30_000 }, async () => {
    const notPostgres = ['serve', '--database-url', 'mysql://root@127.0.0.1/agents'];
    const badAllowList = ['serve', '--allow-outbound', 'https://hooks.example.com'];
    for (const args of [['serve', '--bogus'], ['serve', '--port', 'eighty'], ['serve', '--token', ''], notPostgres, badAllowList, ['launch']]) {
      const { code, output } = await runCli(args);
      expect(code, args.join(' ')).toBe(2);
      expect(output).toContain('Usage: durable-agents serve');
    }
  });

  it('prints the usage with every flag for --help, and exits 0', { timeout: 30_000 }, async () => {
    const { code, output } = await runCli(['serve', '--help']);
    expect(code).toBe(0);
    expect(output).toMatch(/^Usage: durable-agents serve \[flags\]/);
    expect(output).toMatch(/--webhook-timeout-ms N\s+WEBHOOK_TIMEOUT_MS\s+/);
  });
});

describe('durable-agents serve output', () => {
  it('writes JSON lines into a pipe: the simulated LLM warned of, then where it listens; SIGTERM exits 0', { timeout: 60_000 }, async () => {
    const run = start([...CLI, 'serve', '--port', '0', '--db', tempDbFile()]);
    const listening = await vi.waitFor(
      () => {
        const line = jsonLines(run.output()).find((l) => String(l.msg).startsWith('durable-agents listening'));
        if (!line) throw new Error(`not listening yet:\n${run.output()}`);
        return line;
      },
      { timeout: 30_000, interval: 50 },
    );
    expect(listening).toMatchObject({ level: 30, store: 'sqlite', auth: 'none', model: 'gpt-4o-mini' });
    expect(listening.dashboard).toBe(`${String(listening.url)}/`);
    expect((await fetch(`${String(listening.url)}/healthz`)).status).toBe(200);
    const warning = jsonLines(run.output()).find((l) => l.level === 40);
    expect(String(warning?.msg)).toContain('SIMULATED LLM');

    run.child.kill('SIGTERM');
    expect(await run.exit).toBe(0);
    const lines = run.output().trimEnd().split('\n');
    expect(lines.every((line) => isJson(line)), run.output()).toBe(true);
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg).at(-1)).toBe('stopped');
  });

  it('greets a terminal with readable lines: the dashboard and API first, the simulated LLM, the data file; Ctrl-C exits 0', { timeout: 60_000 }, async () => {
    const db = tempDbFile();
    // `exec`: `script` runs the command through $SHELL, or /bin/sh (dash) where SHELL is unset as on CI, and dash
    // does not replace itself with a last command: it would sit in the terminal's foreground group and die of the
    // Ctrl-C itself (exit 130), whatever the CLI does.
    const command = `exec ${[...CLI, 'serve', '--port', '0', '--db', db].map(shellQuote).join(' ')}`;
    // `script` runs the command on a new pseudo-terminal and copies what it writes; --return: its exit code.
    const run = start(['script', '--quiet', '--return', '--flush', '--command', command, '/dev/null'], { TERM: 'xterm-256color' });
    const dashboard = await vi.waitFor(
      () => {
        const match = /Dashboard\s+(http:\/\/127\.0\.0\.1:\d+\/)/.exec(plain(run.output()));
        if (!match) throw new Error(`no greeting yet:\n${run.output()}`);
        return match[1]!;
      },
      { timeout: 30_000, interval: 50 },
    );
    expect((await fetch(`${dashboard}healthz`)).status).toBe(200);
    const text = plain(run.output());
    const greeting = text.slice(text.indexOf('durable-agents is ready'));
    const labels = greeting.split(/\r?\n/).map((l) => l.trim().split(/\s+/)[0]);
    expect(labels.slice(1, 4)).toEqual(['Dashboard', 'API', 'LLM']);
    expect(greeting).toMatch(/API\s+http:\/\/127\.0\.0\.1:\d+ {2}\(OpenAPI document: /);
    expect(greeting).toContain('*** SIMULATED');
    expect(greeting).toContain(`SQLite file ${db}`);
    expect(text).toMatch(/\] WARN: \*\*\* SIMULATED LLM/); // the log lines are readable too
    expect(text.split(/\r?\n/).filter((line) => line.startsWith('{'))).toEqual([]);
    expect(run.output()).toMatch(/\u001b\[/); // this terminal has colours

    run.child.stdin!.write('\u0003'); // Ctrl-C: the terminal sends SIGINT
    expect(await run.exit).toBe(0);
    expect(plain(run.output())).toMatch(/INFO: stopped/);
  });
});

function jsonLines(text: string): Record<string, unknown>[] {
  return text.split('\n').filter(isJson).map((line) => JSON.parse(line) as Record<string, unknown>);
}

function isJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

/** Without colour codes. */
function plain(text: string): string {
  return text.replace(/\u001b\[[0-9;]*m/g, '');
}

function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

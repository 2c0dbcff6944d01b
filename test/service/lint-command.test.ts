// `durable-agents lint <machine>`: the real CLI as a process for a built-in machine and for modules
// (one with a broken machine, the docs' TypeScript example), then the formats and usage errors in process.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runLintCommand } from '../../src/service/commands/lint.js';
import { ROOT } from '../helpers/server-process.js';
import { tempDir } from '../helpers/temp.js';

const CLI = [process.execPath, '--conditions=development', '--import', 'tsx', 'src/service/cli.ts'];

/** Runs the CLI to its end: its exit code and what it wrote (stdout and stderr). */
function runCli(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(CLI[0]!, [...CLI.slice(1), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output })); // once the pipes are drained, not only exited
  });
}

/**
 * A module outside the repository exporting a definition with an error and a machine with a warning.
 * It imports XState by file (a bare `xstate` does not resolve from a temp folder), the build the CLI
 * itself loads under `--conditions=development`.
 */
function brokenModule(): string {
  const xstate = pathToFileURL(path.join(ROOT, 'node_modules/xstate/dist/xstate.development.cjs.mjs')).href;
  const file = path.join(tempDir('lint-'), 'broken.mjs');
  fs.writeFileSync(
    file,
    `import { fromPromise, setup } from ${JSON.stringify(xstate)};
const work = fromPromise(async () => 1);
export const refused = {
  name: 'refused',
  machine: setup({ actors: { work } }).createMachine({
    id: 'refused',
    initial: 'calling',
    states: { calling: { invoke: { id: 'job', src: 'wrok', onDone: 'done', onError: 'done' } }, done: { type: 'final' } },
  }),
};
export const fragile = setup({ actors: { work } }).createMachine({
  id: 'fragile',
  initial: 'calling',
  states: { calling: { invoke: { src: 'work', onDone: 'done', onError: 'done' } }, done: { type: 'final' } },
});
export const notAMachine = { name: 'nothing here' };
`,
  );
  return file;
}

describe('durable-agents lint (the CLI as a process)', () => {
  it('lints the built-in agent clean: exit 0', { timeout: 30_000 }, async () => {
    const { code, output } = await runCli(['lint', 'agent']);
    expect(output).toBe('agent: no findings.\n');
    expect(code).toBe(0);
  });

  it('lints every machine a module exports, prints each finding with its path and code, and exits 1 for an error', { timeout: 30_000 }, async () => {
    const { code, output } = await runCli(['lint', brokenModule()]);
    const lines = output.trimEnd().split('\n');
    expect(lines).toEqual([
      expect.stringMatching(/^error {4}refused\.calling {2}unregistered_actor: Invoke "job" names the actor "wrok", which setup\(\{ actors \}\) does not register/),
      expect.stringMatching(/^warning {2}fragile\.calling {2}invoke_without_id: An invoke of "work" has no id/),
      'refused, fragile: 1 error, 1 warning.',
    ]);
    expect(code).toBe(1);
  });

  it("imports a TypeScript module (the docs' example), which lints clean", { timeout: 30_000 }, async () => {
    const { code, output } = await runCli(['lint', 'test/docs/examples/digest-machine.ts']);
    expect(output).toBe('digestMachine: no findings.\n');
    expect(code).toBe(0);
  });

  it('exits 2 with the usage for a machine it does not know', { timeout: 30_000 }, async () => {
    const { code, output } = await runCli(['lint', 'nope']);
    expect(output).toMatch(/^Unknown machine "nope"\. Known: agent; or give the path of a module\.\nUsage: durable-agents lint <machine>/);
    expect(code).toBe(2);
  });
});

describe('durable-agents lint (in process)', () => {
  async function run(...argv: string[]) {
    const lines: string[] = [];
    const code = await runLintCommand(argv, (line) => lines.push(line));
    return { code, text: lines.join('\n') };
  }

  it('prints the findings as JSON with --format json', async () => {
    const { code, text } = await run(brokenModule(), '--format', 'json');
    expect(code).toBe(1);
    expect(JSON.parse(text)).toEqual({
      machines: ['refused', 'fragile'],
      errors: 1,
      warnings: 1,
      findings: [
        { machine: 'refused', severity: 'error', code: 'unregistered_actor', path: 'refused.calling', message: expect.stringContaining('"wrok"') },
        { machine: 'fragile', severity: 'warning', code: 'invoke_without_id', path: 'fragile.calling', message: expect.stringContaining('no id') },
      ],
    });
    expect(JSON.parse((await run('agent', '--format=json')).text)).toEqual({ machines: ['agent'], errors: 0, warnings: 0, findings: [] });
  });

  it('exits 2 for usage errors: no machine, two, a bad format, a missing file, a module without machines', async () => {
    expect(await run()).toMatchObject({ code: 2, text: expect.stringMatching(/^Which machine\?\nUsage: durable-agents lint/) });
    expect(await run('agent', 'digest')).toMatchObject({ code: 2, text: expect.stringMatching(/^One machine at a time/) });
    expect(await run('agent', '--format', 'xml')).toMatchObject({ code: 2, text: expect.stringMatching(/--format must be text or json/) });
    expect(await run('./no/such/machine.ts')).toMatchObject({ code: 2, text: expect.stringMatching(/^No file at .*no\/such\/machine\.ts\.$/) });
    const empty = path.join(tempDir('lint-'), 'empty.mjs');
    fs.writeFileSync(empty, 'export const answer = 42;\n');
    expect(await run(empty)).toMatchObject({ code: 2, text: expect.stringMatching(/exports no MachineDefinition and no XState machine/) });
    expect(await run('--help')).toMatchObject({ code: 0, text: expect.stringMatching(/^Usage: durable-agents lint <machine> \[--format text\|json\]/) });
  });
});

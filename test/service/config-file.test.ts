// `serve --config FILE`: the loader on modules written to a temp folder (object, function, async
// function, .mjs and .ts, and what it refuses), createRuntime's duplicate names, `paths` and `lint`
// with --config, and real `serve` processes: the docs' example config served, a missing one refused.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import { silentLogger } from '../../src/core/logger.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ConfigFileError, loadConfigFile } from '../../src/service/config-file.js';
import { runLintCommand } from '../../src/service/commands/lint.js';
import { runPathsCommand } from '../../src/service/commands/paths.js';
import { defineConfig } from '../../src/index.js';
import { digestDefinition } from '../docs/examples/digest-machine.js';
import { api, killAllServers, ROOT, startServer } from '../helpers/server-process.js';
import { tempDbFile, tempDir } from '../helpers/temp.js';

const EXAMPLE = 'test/docs/examples/digest.config.ts';
const url = (file: string) => JSON.stringify(pathToFileURL(path.join(ROOT, file)).href);
const XSTATE = JSON.stringify(pathToFileURL(path.join(ROOT, 'node_modules/xstate/dist/xstate.development.cjs.mjs')).href);
const DIGEST = url('test/docs/examples/digest-machine.ts');
const SUPERVISOR = url('test/docs/examples/supervisor-machine.ts');

const llm = createSimulatedLlm();
const context = { llm, logger: silentLogger };

/** A module in a fresh temp folder; returns its absolute path. */
function writeModule(name: string, text: string): string {
  const file = path.join(tempDir('config-'), name);
  fs.writeFileSync(file, text);
  return file;
}

const REFUSED = `import { fromPromise, setup } from ${XSTATE};
const work = fromPromise(async () => 1);
export default {
  machines: [{
    name: 'refused',
    machine: setup({ actors: { work } }).createMachine({
      id: 'refused',
      initial: 'calling',
      states: { calling: { invoke: { id: 'job', src: 'wrok', onDone: 'done', onError: 'done' } }, done: { type: 'final' } },
    }),
  }],
};
`;

afterEach(() => killAllServers());

describe('loadConfigFile', () => {
  it('loads an object default export from a .mjs module (relative to cwd)', async () => {
    const file = writeModule('object.mjs', `import { supervisorDefinition } from ${SUPERVISOR};\nexport default { machines: [supervisorDefinition] };\n`);
    const loaded = await loadConfigFile(path.basename(file), context, { cwd: path.dirname(file) });
    expect(loaded).toMatchObject({ file, tools: [], mcpServers: undefined });
    expect(loaded.machines.map((m) => m.name)).toEqual(['supervisor']);
  });

  it('calls a function default export with the llm and logger', async () => {
    const file = writeModule(
      'function.mjs',
      `import { digestDefinition } from ${DIGEST};
export default (ctx) => {
  globalThis.__configContext = ctx;
  return { machines: [digestDefinition({ llm: ctx.llm, deliver: async () => ({ messageId: 'm' }) })] };
};
`,
    );
    const loaded = await loadConfigFile(file, context);
    expect(loaded.machines.map((m) => m.name)).toEqual(['digest']);
    expect((globalThis as { __configContext?: unknown }).__configContext).toEqual(context);
    expect((globalThis as { __configContext?: { llm: unknown } }).__configContext!.llm).toBe(llm);
  });

  it('awaits an async function from a .ts module, with tools and mcpServers', async () => {
    const file = writeModule(
      'async.ts',
      `interface Context { llm: { kind: string } }
export default async ({ llm }: Context) => {
  await new Promise((resolve) => setTimeout(resolve, 5));
  return {
    tools: [{ name: 'echo_' + llm.kind, description: 'Echoes', execute: (args: unknown) => args }],
    mcpServers: { files: { command: 'mcp-files', args: ['--root', '.'] } },
  };
};
`,
    );
    const loaded = await loadConfigFile(file, context);
    expect(loaded.machines).toEqual([]);
    expect(loaded.tools.map((t) => t.name)).toEqual(['echo_simulated']);
    expect(loaded.mcpServers).toEqual({ files: { command: 'mcp-files', args: ['--root', '.'] } });
  });

  it('loads the docs example config, typed by defineConfig', async () => {
    expect(defineConfig({ tools: [] })).toEqual({ tools: [] });
    const loaded = await loadConfigFile(EXAMPLE, context, { cwd: ROOT });
    expect(loaded.machines.map((m) => m.name)).toEqual(['digest']);
    expect(loaded.tools.map((t) => ({ name: t.name, approval: t.approval }))).toEqual([{ name: 'refund', approval: true }]);
  });

  it('refuses, naming the file and the cause: a module that throws on import', async () => {
    const file = writeModule('throws.mjs', `throw new Error('boom at import');\n`);
    const err = await loadConfigFile(file, context).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigFileError);
    expect((err as Error).message).toBe(`Config ${file}: cannot import it: boom at import`);
  });

  it('refuses a function that throws, a missing file, a wrong extension, no default export, unknown keys, wrong shapes', async () => {
    const cases: [string, string, RegExp][] = [
      ['fn-throws.mjs', `export default () => { throw new Error('no key'); };\n`, /its default export threw: no key$/],
      ['config.json', `{}`, /a \.js, \.mjs, \.ts or \.mts module\.$/],
      ['named.mjs', `export const config = {};\n`, /no default export/],
      ['typo.mjs', `export default { machine: [] };\n`, /unknown key "machine"/],
      ['number.mjs', `export default 42;\n`, /not a config object/],
      ['machines.mjs', `export default { machines: [{ name: 'x', machine: {} }] };\n`, /machines\.0\.machine must be an XState machine/],
      ['tools.mjs', `export default { tools: [{ name: 't' }] };\n`, /tools\.0\.execute must be a function/],
    ];
    for (const [name, text, cause] of cases) {
      const file = writeModule(name, text);
      await expect(loadConfigFile(file, context), name).rejects.toThrow(cause);
      await expect(loadConfigFile(file, context), name).rejects.toThrow(`Config ${file}: `);
    }
    const missing = path.join(tempDir('config-'), 'missing.ts');
    await expect(loadConfigFile(missing, context)).rejects.toThrow(`Config ${missing}: no such file.`);
  });

  it('refuses a machine the linter refuses, with its findings', async () => {
    const file = writeModule('refused.mjs', REFUSED);
    await expect(loadConfigFile(file, context)).rejects.toThrow(new RegExp(`^Config ${file}: machine "refused" is refused by the linter \\(1 error\\):\\n  .*unregistered_actor`));
    // `durable-agents lint` loads it all the same, to show the findings.
    expect((await loadConfigFile(file, context, { lint: false })).machines.map((m) => m.name)).toEqual(['refused']);
  });

  it('refuses two machines with the same name, also the name of the service\'s own', async () => {
    const twice = writeModule('twice.mjs', `import { supervisorDefinition } from ${SUPERVISOR};\nexport default { machines: [supervisorDefinition, supervisorDefinition] };\n`);
    await expect(loadConfigFile(twice, context)).rejects.toThrow(`Config ${twice}: two machines are named "supervisor".`);
    const agent = writeModule('agent.mjs', `import { supervisorDefinition } from ${SUPERVISOR};\nexport default { machines: [{ ...supervisorDefinition, name: 'agent' }] };\n`);
    await expect(loadConfigFile(agent, context)).rejects.toThrow(/two machines are named "agent": the service's own machine/);
    const tools = writeModule('tools-twice.mjs', `const t = { name: 't', execute: () => 1 };\nexport default { tools: [t, t] };\n`);
    await expect(loadConfigFile(tools, context)).rejects.toThrow('two tools are named "t".');
  });
});

describe('createRuntime', () => {
  it('refuses two machines with the same name', async () => {
    const store = await openSqliteStore(tempDbFile());
    try {
      const digest = digestDefinition({ llm, deliver: async () => ({ messageId: 'm' }) });
      await expect(createRuntime({ store, machines: [digest, digest] })).rejects.toThrow('Two machines are named "digest"');
    } finally {
      await store.close();
    }
  });
});

describe('paths and lint with --config', () => {
  it('find the config machine by name', async () => {
    const file = writeModule(
      'toggle.mjs',
      `import { setup } from ${XSTATE};
export default () => ({
  machines: [{
    name: 'toggle',
    machine: setup({}).createMachine({ id: 'toggle', initial: 'off', states: { off: { on: { flip: 'on' } }, on: { on: { flip: 'off' } } } }),
  }],
});
`,
    );
    const lines: string[] = [];
    expect(await runLintCommand(['toggle', '--config', file], (l) => lines.push(l))).toBe(0);
    expect(lines).toEqual(['toggle: no findings.']);
    lines.length = 0;
    expect(await runPathsCommand(['toggle', '--config', file, '--format', 'json'], (l) => lines.push(l))).toBe(0);
    const document = JSON.parse(lines.join('\n')) as { machine: string; events: unknown[]; coverage: { states: { missing: unknown[] } } };
    expect(document).toMatchObject({ machine: 'toggle', events: [{ type: 'flip' }], coverage: { states: { missing: [] } } });
    lines.length = 0;
    expect(await runPathsCommand(['nothing', '--config', file], (l) => lines.push(l))).toBe(2);
    expect(lines[0]).toMatch(/^Unknown machine "nothing"\. Known: agent, toggle\./);
    // The example's digest: found, linted; its paths need the outputs of its actors, which a path test gives.
    lines.length = 0;
    expect(await runLintCommand(['digest', '--config', EXAMPLE], (l) => lines.push(l))).toBe(0);
    expect(lines.at(-1)).toMatch(/^digest: /);
    lines.length = 0;
    expect(await runPathsCommand(['digest', '--config', EXAMPLE], (l) => lines.push(l))).toBe(1);
    expect(lines[0]).toMatch(/^Cannot generate the paths of "digest": .*write a path test/);
  });

  it('lint shows the findings of a machine serve would refuse', async () => {
    const file = writeModule('refused.mjs', REFUSED);
    const lines: string[] = [];
    expect(await runLintCommand(['refused', '--config', file], (l) => lines.push(l))).toBe(1);
    expect(lines.join('\n')).toMatch(/unregistered_actor/);
  });
});

describe('serve --config (real processes)', () => {
  it('serves the example config: its machine is listed and spawned over HTTP', { timeout: 60_000 }, async () => {
    const server = await startServer({ store: ['--db', tempDbFile()], llmUrl: 'http://127.0.0.1:9/v1', extra: ['--config', EXAMPLE] });
    const machines = await api(server, 'GET', '/machines');
    expect(machines.status).toBe(200);
    expect(JSON.stringify(machines.body)).toContain('"digest"');
    const spawned = await api(server, 'POST', '/agents', { machine: 'digest', id: 'd1' });
    expect(spawned.status).toBe(201);
    expect(spawned.body).toMatchObject({ id: 'd1', machine: 'digest', status: 'active' });
    expect((await api(server, 'GET', '/agents/d1')).body).toMatchObject({ machine: 'digest', state: 'idle' });
    expect(server.output.join('\n')).toMatch(/config loaded/);
  });

  it('exits 1 with one line naming a config that cannot be loaded', { timeout: 30_000 }, async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, LOG_FORMAT: 'json' };
    for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'DURABLE_AGENTS_CONFIG', 'PORT']) delete env[name];
    const args = ['--conditions=development', '--import', 'tsx', 'src/service/cli.ts', 'serve', '--port', '0', '--db', tempDbFile(), '--config', 'missing.ts'];
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code).toBe(1);
    expect(output).toBe(`Config ${path.join(ROOT, 'missing.ts')}: no such file.\n`);
  });
});

// MCP servers as `serve` reads them: `--mcp NAME=COMMAND|URL` (repeatable) and DURABLE_AGENTS_MCP,
// a config file's `mcpServers`, the two merged (a name in both refused), and what each refuses.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/core/logger.js';
import { InvalidInputError } from '../../src/core/errors.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import { loadConfig } from '../../src/service/config.js';
import { ConfigFileError, loadConfigFile, mergeMcpServers } from '../../src/service/config-file.js';
import { AUTH, killAllServers, ROOT, startServer } from '../helpers/server-process.js';
import { tempDbFile, tempDir } from '../helpers/temp.js';

const context = { llm: createSimulatedLlm(), logger: silentLogger };

function writeModule(name: string, text: string): string {
  const file = path.join(tempDir('mcp-config-'), name);
  fs.writeFileSync(file, text);
  return file;
}

describe('--mcp NAME=COMMAND|URL', () => {
  it('reads a command line split on whitespace, and an http(s) URL, each under its name; repeatable', () => {
    const config = loadConfig(['--mcp', 'fs=node  /srv/fs/index.js /tmp/work', '--mcp=web=https://mcp.example.com/mcp', '--mcp', 'clock=mcp-clock'], {});
    expect(config.mcp).toEqual({
      fs: { command: 'node', args: ['/srv/fs/index.js', '/tmp/work'] },
      web: { url: 'https://mcp.example.com/mcp' },
      clock: { command: 'mcp-clock' },
    });
    // Only the first = separates the name: the rest is the command's or the URL's.
    expect(loadConfig(['--mcp', 'q=http://127.0.0.1:3001/mcp?a=b'], {}).mcp).toEqual({ q: { url: 'http://127.0.0.1:3001/mcp?a=b' } });
    expect(loadConfig(['--mcp', 'e=env A=1 run'], {}).mcp).toEqual({ e: { command: 'env', args: ['A=1', 'run'] } });
  });

  it('is none by default', () => {
    expect(loadConfig([], {}).mcp).toEqual({});
  });

  it('reads DURABLE_AGENTS_MCP, entries separated by ";", and the flags replace it', () => {
    const env = { DURABLE_AGENTS_MCP: 'a=cmd-a --x ; b=http://localhost:9/mcp;' };
    expect(loadConfig([], env).mcp).toEqual({ a: { command: 'cmd-a', args: ['--x'] }, b: { url: 'http://localhost:9/mcp' } });
    expect(loadConfig(['--mcp', 'c=cmd-c'], env).mcp).toEqual({ c: { command: 'cmd-c' } });
  });

  it.each([
    [['--mcp', 'no-equals'], '--mcp takes NAME=COMMAND or NAME=URL (got "no-equals").'],
    [['--mcp', 'fs='], '--mcp takes NAME=COMMAND or NAME=URL (got "fs=").'],
    [['--mcp', '=node x'], '--mcp: "" is not a server name (1 to 32 letters, digits, _ or -, without "__").'],
    [['--mcp', 'my__fs=node x'], '--mcp: "my__fs" is not a server name (1 to 32 letters, digits, _ or -, without "__").'],
    [['--mcp', 'a.b=node x'], '--mcp: "a.b" is not a server name (1 to 32 letters, digits, _ or -, without "__").'],
    [['--mcp', `${'n'.repeat(33)}=node`], `--mcp: "${'n'.repeat(33)}" is not a server name (1 to 32 letters, digits, _ or -, without "__").`],
    [['--mcp', 'w=http://'], '--mcp w: "http://" is not a URL.'],
    [['--mcp', 'fs=node a', '--mcp', 'fs=node b'], '--mcp: two servers are named "fs".'],
    [['--mcp', ''], '--mcp needs a value.'],
  ])('refuses %j with one sentence', (argv, message) => {
    expect(() => loadConfig(argv, {})).toThrow(new InvalidInputError(message));
  });

  it('names the flag when the variable is wrong', () => {
    expect(() => loadConfig([], { DURABLE_AGENTS_MCP: 'a=x;a=y' })).toThrow('--mcp: two servers are named "a".');
  });
});

describe("a config file's mcpServers", () => {
  it('takes every field of McpServerConfig', async () => {
    const servers = {
      files: { command: 'node', args: ['fs.js', '.'], env: { DEBUG: '1' }, cwd: '/tmp', approveDestructive: false, timeoutMs: 5000 },
      web: { url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer x' }, timeoutMs: 1000, concurrency: 4 },
      crm: { url: 'https://crm.example.com/mcp', oauth: { clientId: 'agents', clientSecret: 's', issuer: 'https://auth.example.com', scope: 'crm.read' } },
    };
    const file = writeModule('mcp.mjs', `export default { mcpServers: ${JSON.stringify(servers)} };\n`);
    expect((await loadConfigFile(file, context)).mcpServers).toEqual(servers);
  });

  it.each([
    ['{ "a__b": { command: "x" } }', /mcpServers: "a__b" is not a server name/],
    ['{ "a b": { command: "x" } }', /mcpServers: "a b" is not a server name/],
    ['{ a: { command: "x", url: "http://h/mcp" } }', /mcpServers\.a must be \{ command, .* or \{ url/],
    ['{ a: { url: "ftp://h/mcp" } }', /mcpServers\.a\.url must be an http:\/\/ or https:\/\/ URL\.$/],
    ['{ a: { command: "" } }', /mcpServers\.a\.command Too small/],
    ['{ a: { command: "x", approveDestructive: "no" } }', /mcpServers\.a must be/],
    ['{ a: { command: "x", timeoutMs: -1 } }', /mcpServers\.a\.timeoutMs Too small/],
    ['{ a: { url: "http://h/mcp", concurrency: 0 } }', /mcpServers\.a\.concurrency Too small/],
    ['{ a: { url: "http://h/mcp", concurrency: 1.5 } }', /mcpServers\.a must be \{ command.*concurrency\?/],
    ['{ a: { url: "http://h/mcp", oauth: { clientId: "c", clientSecret: "s" } } }', /mcpServers\.a must be \{ command.*oauth\? \(\{ clientId, clientSecret, issuer, scope\? \}\)/],
    ['{ a: { command: "x", oauth: { clientId: "c", clientSecret: "s", issuer: "https://auth" } } }', /mcpServers\.a has unknown key "oauth"\.$/],
  ])('refuses %s', async (servers, cause) => {
    const file = writeModule('bad.mjs', `export default { mcpServers: ${servers} };\n`);
    const err = await loadConfigFile(file, context).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigFileError);
    expect((err as Error).message).toMatch(cause);
    expect((err as Error).message.startsWith(`Config ${file}: `)).toBe(true);
  });
});

describe('mergeMcpServers', () => {
  const file = '/srv/agents.config.ts';

  it("joins the flags' servers and the config's", () => {
    expect(mergeMcpServers({ a: { command: 'x' } }, { file, mcpServers: { b: { url: 'http://h/mcp' } } })).toEqual({
      a: { command: 'x' },
      b: { url: 'http://h/mcp' },
    });
    expect(mergeMcpServers({ a: { command: 'x' } }, undefined)).toEqual({ a: { command: 'x' } });
    expect(mergeMcpServers({}, { file, mcpServers: undefined })).toEqual({});
  });

  it('refuses a name both give, naming the file and the servers', () => {
    const run = () => mergeMcpServers({ fs: { command: 'x' }, web: { url: 'http://h/mcp' }, ok: { command: 'y' } }, { file, mcpServers: { fs: { command: 'z' }, web: { command: 'w' } } });
    expect(run).toThrow(ConfigFileError);
    expect(run).toThrow(`Config ${file}: MCP servers "fs", "web" are configured twice, by --mcp (or DURABLE_AGENTS_MCP) and in mcpServers: keep one.`);
  });
});

/** A real `serve` expected to stop by itself before listening: its exit code and everything it wrote. */
async function serveUntilExit(flags: string[]): Promise<{ code: number | null; output: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_FORMAT: 'json' };
  for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'DURABLE_AGENTS_CONFIG', 'DURABLE_AGENTS_MCP', 'PORT']) delete env[name];
  const db = tempDbFile();
  const args = ['--conditions=development', '--import', 'tsx', 'src/service/cli.ts', 'serve', '--port', '0', '--db', db, ...flags];
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000); // it started after all: the test fails on its code
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  clearTimeout(timer);
  // Refused before the store is opened: no file was created.
  expect(fs.existsSync(db)).toBe(false);
  return { code, output };
}

describe('serve with MCP servers it cannot use', () => {
  it('stops before opening anything, with one line: a name both --mcp and the config give (exit 1)', { timeout: 30_000 }, async () => {
    const { code, output } = await serveUntilExit(['--config', 'test/docs/examples/mcp.config.ts', '--mcp', 'files=node other.js']);
    expect(code).toBe(1);
    const file = path.join(ROOT, 'test/docs/examples/mcp.config.ts');
    expect(output).toBe(`Config ${file}: MCP server "files" is configured twice, by --mcp (or DURABLE_AGENTS_MCP) and in mcpServers: keep one.\n`);
  });

  it('exits 2 on a bad --mcp, with the sentence and the usage', { timeout: 30_000 }, async () => {
    const { code, output } = await serveUntilExit(['--mcp', 'my__fs=node x']);
    expect(code).toBe(2);
    expect(output.split('\n')[0]).toBe('--mcp: "my__fs" is not a server name (1 to 32 letters, digits, _ or -, without "__").');
    expect(output).toContain('--mcp NAME=COMMAND|URL');
  });
});

describe("the dashboard of a serve with MCP servers", () => {
  afterEach(() => killAllServers());

  it('names them under the spawn form, and how an agent asks for their tools (none configured: no such line)', { timeout: 60_000 }, async () => {
    const page = async (extra: string[]) => {
      // Nothing is connected at boot: the commands need not exist until an agent asks for their tools.
      const server = await startServer({ store: ['--db', tempDbFile()], llmUrl: 'http://127.0.0.1:9/v1', extra });
      return (await fetch(`${server.url}/`, { headers: AUTH })).text();
    };
    const html = await page(['--mcp', 'files=node files.js', '--mcp', 'search=http://127.0.0.1:9/mcp']);
    const line = /<p class="small muted" id="mcp-servers">(.*?)<\/p>/s.exec(html)?.[1];
    expect(line).toBe('MCP servers here: <code>files</code>, <code>search</code>. An <code>agent</code> is offered their tools with <code>&quot;mcp&quot;: [&quot;files&quot;]</code> in its input.');
    expect(await page([])).not.toContain('id="mcp-servers"');
  });
});

describe('the docs example config (docs/tools.md)', () => {
  it("loads: a stdio server, one that needs no approval, an HTTP one", async () => {
    const loaded = await loadConfigFile('test/docs/examples/mcp.config.ts', context, { cwd: ROOT });
    expect(loaded.mcpServers).toEqual({
      files: { command: 'npx', args: ['mcp-server-filesystem', process.env.FILES_ROOT ?? './data/files'] },
      everything: { command: 'npx', args: ['mcp-server-everything', 'stdio'], approveDestructive: false, timeoutMs: 10_000 },
      search: { url: 'http://127.0.0.1:3001/mcp', headers: { 'x-team': 'docs' } },
    });
  });
});

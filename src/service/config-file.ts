// `serve --config FILE`: a module whose default export adds machines and code tools to the service
// (see define-config.ts). Loaded before the service listens; whatever is wrong with it is one
// ConfigFileError that names the file and the cause, and `serve` exits 1 with it.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import type { CodeTool } from '../agents/reference/tools.js';
import type { ModelPrice } from '../agents/reference/types.js';
import { AgentsError } from '../core/errors.js';
import type { MachineDefinition } from '../durable/definition.js';
import { lintDefinition } from '../durable/lint.js';
import { MCP_SERVER_NAME, type McpServerConfig } from '../mcp/types.js';
import type { ServiceConfig, ServiceConfigContext } from './define-config.js';

/** A config module that cannot be loaded or used; the message names the file and the cause. */
export class ConfigFileError extends AgentsError {
  readonly code = 'invalid_config';
  constructor(
    readonly file: string,
    cause: string,
  ) {
    super(`Config ${file}: ${cause}`);
  }
}

/** What `serve` registers from a config: its machines beside `agent`, its tools on `agent`. */
export interface LoadedConfig {
  file: string;
  machines: MachineDefinition[];
  tools: CodeTool[];
  mcpServers: Record<string, McpServerConfig> | undefined;
  prices: Record<string, ModelPrice> | undefined;
}

export interface LoadConfigFileOptions {
  /** Where a relative path is resolved from (default: the working directory). */
  cwd?: string;
  /** Names the service registers itself (default: `agent`): a config machine may not take one. */
  reserved?: readonly string[];
  /** Refuse a machine the linter finds errors in (default true; `durable-agents lint` shows them instead). */
  lint?: boolean;
}

const EXTENSIONS = /\.(m?js|m?ts)$/;

const isMachine = (v: unknown): boolean =>
  !!v && typeof v === 'object' && typeof (v as { root?: unknown }).root === 'object' && typeof (v as { transition?: unknown }).transition === 'function';

const mcpCommon = { approveDestructive: z.boolean().optional(), timeoutMs: z.number().int().positive().optional(), concurrency: z.number().int().positive().optional() };

const httpUrl = z.string().regex(/^https?:\/\//i, { message: 'must be an http:// or https:// URL' }).refine((url) => URL.canParse(url), { message: 'must be a URL' });
const oauthSchema = z.object({ clientId: z.string().min(1), clientSecret: z.string().min(1), issuer: httpUrl, scope: z.string().optional() }).strict();

const dollarsPerMTok = z.number({ message: 'must be a number of dollars per million tokens' }).finite().nonnegative();

const configSchema = z
  .object({
    machines: z
      .array(
        z.object({ name: z.string().min(1), machine: z.custom((v) => isMachine(v), { message: 'must be an XState machine (setup(...).createMachine(...))' }) }).passthrough(),
        { message: 'must be an array of MachineDefinitions ({ name, machine, ... })' },
      )
      .optional(),
    tools: z
      .array(
        z.object({ name: z.string().min(1), execute: z.custom((v) => typeof v === 'function', { message: 'must be a function' }) }).passthrough(),
        { message: 'must be an array of code tools (tool({ name, description, parameters, execute }))' },
      )
      .optional(),
    mcpServers: z
      .record(
        z.string(),
        z.union(
          [
            z.object({ command: z.string().min(1), args: z.array(z.string()).optional(), env: z.record(z.string(), z.string()).optional(), cwd: z.string().optional(), ...mcpCommon }).strict(),
            z.object({ url: httpUrl, headers: z.record(z.string(), z.string()).optional(), oauth: oauthSchema.optional(), ...mcpCommon }).strict(),
          ],
          { message: 'must be { command, args?, env?, cwd?, approveDestructive?, timeoutMs?, concurrency? } or { url (http:// or https://), headers?, oauth? ({ clientId, clientSecret, issuer, scope? }), approveDestructive?, timeoutMs?, concurrency? }' },
        ),
      )
      .optional(),
    prices: z
      .record(
        z.string().min(1),
        z.object({ inputPerMTok: dollarsPerMTok, outputPerMTok: dollarsPerMTok }, { message: 'must be { inputPerMTok, outputPerMTok } (dollars per million tokens)' }).strict(),
      )
      .optional(),
  })
  .strict();

/**
 * Loads `file` (`.js`, `.mjs` or `.ts`; relative to `cwd`): its default export, called with
 * `context` when it is a function, checked (shape, unique names, the linter) and returned.
 */
export async function loadConfigFile(file: string, context: ServiceConfigContext, options: LoadConfigFileOptions = {}): Promise<LoadedConfig> {
  const abs = path.resolve(options.cwd ?? process.cwd(), file);
  const fail = (cause: string): never => {
    throw new ConfigFileError(abs, cause);
  };
  if (!EXTENSIONS.test(abs)) fail('a config is a .js, .mjs, .ts or .mts module.');
  if (!fs.existsSync(abs) || !fs.statSync(abs).isFile()) fail('no such file.');

  let exports: Record<string, unknown>;
  try {
    exports = await importModule(abs);
  } catch (err) {
    if (err instanceof ConfigFileError) throw err;
    return fail(`cannot import it: ${messageOf(err)}`);
  }
  if (!('default' in exports) || exports.default === undefined) return fail('it has no default export (export default defineConfig({ ... })).');
  let value: unknown = exports.default;
  if (typeof value === 'function') {
    try {
      value = await (value as (c: ServiceConfigContext) => unknown)(context);
    } catch (err) {
      return fail(`its default export threw: ${messageOf(err)}`);
    }
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return fail('its default export is not a config object ({ machines?, tools?, mcpServers?, prices? }) nor a function returning one.');
  const parsed = configSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length > 0 ? issue.path.join('.') : 'the config';
    if (issue.code !== 'unrecognized_keys') return fail(`${where} ${issue.message}.`);
    const keys = `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
    // An unknown key inside an entry (a price's, a server's) is named with where it is.
    return fail(issue.path.length > 0 ? `${where} has ${keys}.` : `${keys} (a config has machines, tools, mcpServers, prices).`);
  }
  const config = value as ServiceConfig;
  const machines = config.machines ?? [];
  const tools = config.tools ?? [];

  const reserved = options.reserved ?? ['agent'];
  const seen = new Set<string>();
  for (const def of machines) {
    if (reserved.includes(def.name)) fail(`two machines are named "${def.name}": the service's own machine and one of the config's.`);
    if (seen.has(def.name)) fail(`two machines are named "${def.name}".`);
    seen.add(def.name);
  }
  for (const name of Object.keys(config.mcpServers ?? {})) {
    if (!MCP_SERVER_NAME.test(name)) fail(`mcpServers: "${name}" is not a server name (1 to 32 letters, digits, _ or -, without "__").`);
  }
  const toolNames = new Set<string>();
  for (const t of tools) {
    if (toolNames.has(t.name)) fail(`two tools are named "${t.name}".`);
    toolNames.add(t.name);
  }
  for (const def of options.lint === false ? [] : machines) {
    const errors = lintDefinition(def).filter((f) => f.severity === 'error');
    if (errors.length > 0) {
      fail(`machine "${def.name}" is refused by the linter (${errors.length === 1 ? '1 error' : `${errors.length} errors`}):\n${errors.map((e) => `  ${e.path}  ${e.code}: ${e.message}`).join('\n')}`);
    }
  }
  return { file: abs, machines, tools, mcpServers: config.mcpServers, prices: config.prices };
}

/**
 * The MCP servers `serve` connects to: those of `--mcp` (or `DURABLE_AGENTS_MCP`) and those of the
 * config's `mcpServers`. A name both give is refused (which one was meant cannot be guessed).
 */
export function mergeMcpServers(flags: Record<string, McpServerConfig>, config: Pick<LoadedConfig, 'file' | 'mcpServers'> | undefined): Record<string, McpServerConfig> {
  return joinOnce(flags, config?.mcpServers, config?.file, (names, many) => `MCP server${many ? 's' : ''} ${names} ${many ? 'are' : 'is'} configured twice, by --mcp (or DURABLE_AGENTS_MCP) and in mcpServers: keep one.`);
}

/**
 * The models' prices `serve` counts budgets in dollars with: those of `--llm-prices` (or
 * `LLM_PRICES`) and those of the config's `prices`. A model both price is refused, as a server both
 * name is: which price was meant cannot be guessed.
 */
export function mergePrices(flags: Record<string, ModelPrice> | undefined, config: Pick<LoadedConfig, 'file' | 'prices'> | undefined): Record<string, ModelPrice> | undefined {
  if (!config?.prices || Object.keys(config.prices).length === 0) return flags;
  return joinOnce(flags ?? {}, config.prices, config.file, (names) => `the price of ${names} is given twice, by --llm-prices (or LLM_PRICES) and in prices: keep one.`);
}

/** The flags' entries and the config file's, refusing a name both give (`twice` says which, quoted). */
function joinOnce<T>(flags: Record<string, T>, fromFile: Record<string, T> | undefined, file: string | undefined, twice: (names: string, many: boolean) => string): Record<string, T> {
  const both = Object.keys(flags).filter((name) => fromFile !== undefined && Object.hasOwn(fromFile, name));
  if (file !== undefined && both.length > 0) throw new ConfigFileError(file, twice(both.map((n) => `"${n}"`).join(', '), both.length > 1));
  return { ...fromFile, ...flags };
}

/** A module by file: as it is (node, or a process started with a TypeScript loader), else TypeScript through tsx. */
async function importModule(file: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(file).href;
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (err) {
    // Node without a TypeScript loader refuses the extension, or (some versions) parses the file
    // as JavaScript and fails on its types before running any of it.
    const notRead = (err as { code?: unknown }).code === 'ERR_UNKNOWN_FILE_EXTENSION' || err instanceof SyntaxError;
    if (!notRead || !/\.m?ts$/.test(file)) throw err;
  }
  // tsx's loader, registered for the whole process (not tsImport, whose namespace loads a second
  // copy of every module the config imports, this package's included: its machines would not find
  // the runtime's registry of agents).
  const tsx = 'tsx/esm/api';
  let register: () => unknown;
  try {
    ({ register } = (await import(tsx)) as { register: () => unknown });
  } catch {
    throw new ConfigFileError(file, 'install tsx to load a .ts config (npm install --save-dev tsx), or give the compiled .js.');
  }
  register();
  try {
    // A new URL: the failed import of the first one is cached.
    return (await import(`${url}?loader=tsx`)) as Record<string, unknown>;
  } catch (err) {
    // tsx reads a .ts file of a CommonJS package as CommonJS, which cannot import this ES module package.
    if (!(err instanceof SyntaxError) || !file.endsWith('.ts')) throw err;
    throw new ConfigFileError(file, `cannot import it as an ES module (${err.message}): name it .mts, or add "type": "module" to its package.json.`);
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The machines of a config for `durable-agents paths|lint NAME --config FILE`: loaded as `serve`
 * loads it, with the simulated LLM (never called) and no logs, and not refused by the linter.
 */
export async function configMachines(file: string): Promise<MachineDefinition[]> {
  const [{ createSimulatedLlm }, { silentLogger }] = await Promise.all([import('../llm/simulated-client.js'), import('../core/logger.js')]);
  return (await loadConfigFile(file, { llm: createSimulatedLlm(), logger: silentLogger }, { lint: false })).machines;
}

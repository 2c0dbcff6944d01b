import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { AnyStateMachine } from 'xstate';
import { agentDefinition } from '../../agents/reference/definition.js';
import type { MachineDefinition } from '../../durable/definition.js';
import { lintDefinition, type LintFinding } from '../../durable/lint.js';
import { createSimulatedLlm } from '../../llm/simulated-client.js';
import { configMachines } from '../config-file.js';

/** The machines `durable-agents lint` knows by name, registered as `serve` registers them. */
const MACHINES: Record<string, () => MachineDefinition> = {
  agent: () => agentDefinition({ llm: createSimulatedLlm() }),
};

export const LINT_USAGE = `Usage: durable-agents lint <machine> [--format text|json] [--config FILE]
Checks a machine for what the runtime cannot make durable or what will surprise, as registration does
(errors refuse a machine, warnings are logged): one line per finding with its state path and code.
  <machine>  a built-in machine (${Object.keys(MACHINES).join(', ')}), a machine of the --config file, or the path of
             a JavaScript or TypeScript module: every MachineDefinition and XState machine it exports is linted
  --format   text (default) or json
  --config   the module \`serve --config\` loads: its machines are known by name
Exits 0 without errors, 1 with errors, 2 for a usage error.`;

/** One linted machine: its name (the definition's, else the export's) and what the linter found. */
interface Linted {
  name: string;
  findings: LintFinding[];
}

/**
 * `durable-agents lint <machine> [--format text|json]`. `argv` is what follows `lint`; returns the
 * exit code: 0 without errors, 1 with errors, 2 for a usage error (a machine it cannot find or load).
 */
export async function runLintCommand(argv: string[], out: (line: string) => void): Promise<number> {
  const parsed = parseLintArgs(argv);
  if ('help' in parsed) {
    out(LINT_USAGE);
    return 0;
  }
  if ('error' in parsed) {
    out(`${parsed.error}\n${LINT_USAGE}`);
    return 2;
  }
  const loaded = await loadDefinitions(parsed.machine, parsed.config);
  if ('error' in loaded) {
    out(loaded.error);
    return 2;
  }
  const linted: Linted[] = loaded.definitions.map((def) => ({ name: def.name, findings: lintDefinition(def) }));
  const all = linted.flatMap((l) => l.findings);
  const errors = all.filter((f) => f.severity === 'error').length;
  const warnings = all.length - errors;

  if (parsed.format === 'json') {
    const findings = linted.flatMap((l) => l.findings.map((f) => ({ machine: l.name, ...f })));
    out(JSON.stringify({ machines: linted.map((l) => l.name), errors, warnings, findings }, null, 2));
  } else {
    for (const f of all) out(`${f.severity.padEnd(7)}  ${f.path}  ${f.code}: ${f.message}`);
    const names = linted.map((l) => l.name).join(', ');
    out(all.length === 0 ? `${names}: no findings.` : `${names}: ${plural(errors, 'error')}, ${plural(warnings, 'warning')}.`);
  }
  return errors > 0 ? 1 : 0;
}

type Loaded = { definitions: (MachineDefinition & { name: string })[] } | { error: string };

/** A built-in machine by name, or what a module exports: its definitions, then its machines no definition holds. */
async function loadDefinitions(machine: string, config: string | undefined): Promise<Loaded> {
  const builtin = MACHINES[machine];
  if (builtin) return { definitions: [builtin()] };
  if (config !== undefined) {
    let machines: MachineDefinition[];
    try {
      machines = await configMachines(config);
    } catch (err) {
      return { error: err instanceof Error ? err.message : String(err) };
    }
    const found = machines.find((m) => m.name === machine);
    if (found) return { definitions: [found] };
    if (!looksLikePath(machine)) {
      return { error: `Unknown machine "${machine}". Known: ${[...Object.keys(MACHINES), ...machines.map((m) => m.name)].join(', ')}.\n${LINT_USAGE}` };
    }
  }
  const file = path.resolve(machine);
  if (!looksLikePath(machine) && !fs.existsSync(file)) {
    return { error: `Unknown machine "${machine}". Known: ${Object.keys(MACHINES).join(', ')}; or give the path of a module.\n${LINT_USAGE}` };
  }
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) return { error: `No file at ${file}.` };
  let exports: Record<string, unknown>;
  try {
    exports = await importModule(file);
  } catch (err) {
    return { error: `Cannot import ${file}: ${err instanceof Error ? err.message : String(err)}` };
  }
  const definitions: (MachineDefinition & { name: string })[] = [];
  const covered = new Set<unknown>();
  for (const value of Object.values(exports)) {
    if (isDefinition(value) && !covered.has(value)) {
      covered.add(value);
      covered.add(value.machine);
      definitions.push(value);
    }
  }
  for (const [key, value] of Object.entries(exports)) {
    if (isMachine(value) && !covered.has(value)) {
      covered.add(value);
      definitions.push({ name: key === 'default' ? value.id : key, machine: value });
    }
  }
  if (definitions.length === 0) {
    return { error: `${file} exports no MachineDefinition and no XState machine (a function that makes one is not called).` };
  }
  return { definitions };
}

async function importModule(file: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(file).href;
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'ERR_UNKNOWN_FILE_EXTENSION' || !/\.[cm]?tsx?$/.test(file)) throw err;
  }
  // A TypeScript module and no loader: tsx's, when it is installed beside this package.
  const tsx = 'tsx/esm/api';
  let register: () => unknown;
  try {
    ({ register } = (await import(tsx)) as { register: () => unknown });
  } catch {
    throw new Error('importing a TypeScript module needs a loader: install tsx, run `node --import tsx` on the CLI, or lint the compiled JavaScript.');
  }
  register();
  // A new URL: the failed import of the first one is cached.
  return (await import(`${url}?loader=tsx`)) as Record<string, unknown>;
}

function isMachine(value: unknown): value is AnyStateMachine {
  if (!value || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return typeof v.root === 'object' && typeof v.implementations === 'object' && typeof v.transition === 'function' && typeof v.getInitialSnapshot === 'function';
}

function isDefinition(value: unknown): value is MachineDefinition {
  if (!value || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return typeof v.name === 'string' && isMachine(v.machine);
}

function looksLikePath(text: string): boolean {
  return /[\\/]/.test(text) || /\.[cm]?[jt]sx?$/.test(text);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

type Parsed = { help: true } | { error: string } | { machine: string; format: 'text' | 'json'; config: string | undefined };

function parseLintArgs(argv: string[]): Parsed {
  let values: { format?: string | undefined; config?: string | undefined; help?: boolean | undefined };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { format: { type: 'string' }, config: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    }));
  } catch (err) {
    return { error: (err as Error).message };
  }
  if (values.help) return { help: true };
  const { format = 'text' } = values;
  if (format !== 'text' && format !== 'json') return { error: `--format must be text or json, not "${format}".` };
  const [machine, ...more] = positionals;
  if (machine === undefined) return { error: 'Which machine?' };
  if (more.length > 0) return { error: `One machine at a time ("${machine}", then "${more[0]}").` };
  return { machine, format, config: values.config };
}

import { parseArgs } from 'node:util';
import { z } from 'zod';
import { agentPathTestOptions } from '../../testing/agent-paths.js';
import { ambiguousTypes, eventLabel, jsonReplacer, stateLabel } from '../../testing/format.js';
import { pathTests, type PathTestOptions } from '../../testing/path-tests.js';
import type { MachineDefinition } from '../../durable/definition.js';
import { registerMachine } from '../../runtime/registered-machine.js';
import { configMachines } from '../config-file.js';

/** The machines `durable-agents paths` knows, with the settings their path tests use. */
const MACHINES: Record<string, () => PathTestOptions> = {
  agent: agentPathTestOptions,
};

export const PATHS_USAGE = `Usage: durable-agents paths <machine> [--format text|json] [--depth N] [--config FILE]
Prints the test paths generated from a registered machine's statechart (states and events per step)
and which of its states and transitions they cover.
  --format   text (default) or json
  --depth    also explore simple paths of at most N events (default 4; 0: shortest paths only)
  --config   the module \`serve --config\` loads: its machines are known by name (each event is
             explored with one sample: the least value of each field its schema requires)
Machines: ${Object.keys(MACHINES).join(', ')}`;

/**
 * `durable-agents paths <machine> [--format json|text] [--depth N]`. `argv` is what follows
 * `paths`; returns the exit code (0, or 2 for a usage error).
 */
export async function runPathsCommand(argv: string[], out: (line: string) => void): Promise<number> {
  const parsed = parsePathsArgs(argv);
  if ('help' in parsed) {
    out(PATHS_USAGE);
    return 0;
  }
  if ('error' in parsed) {
    out(`${parsed.error}\n${PATHS_USAGE}`);
    return 2;
  }
  let base: PathTestOptions;
  const options = MACHINES[parsed.machine];
  if (options) base = options();
  else {
    let machines: MachineDefinition[] = [];
    if (parsed.config !== undefined) {
      try {
        machines = await configMachines(parsed.config);
      } catch (err) {
        out(err instanceof Error ? err.message : String(err));
        return 2;
      }
    }
    const found = machines.find((m) => m.name === parsed.machine);
    if (!found) {
      out(`Unknown machine "${parsed.machine}". Known: ${[...Object.keys(MACHINES), ...machines.map((m) => m.name)].join(', ')}.\n${PATHS_USAGE}`);
      return 2;
    }
    base = configPathOptions(found);
  }
  let suite: ReturnType<typeof pathTests>;
  try {
    suite = pathTests({ ...base, simplePathDepth: parsed.depth ?? base.simplePathDepth });
  } catch (err) {
    const hint = options ? '' : ' (a machine of a config is explored with one sample of each event and no actor outputs: write a path test with pathTests({ events, outcomes }) for one that needs them)';
    out(`Cannot generate the paths of "${parsed.machine}": ${err instanceof Error ? err.message : String(err)}${hint}`);
    return 1;
  }
  const definition = 'root' in base.machine ? base.machine : base.machine.machine;
  const version = ('version' in base.machine && base.machine.version) || definition.version || '1';

  if (parsed.format === 'json') {
    const document = {
      machine: suite.name,
      version,
      events: suite.events,
      coverage: suite.coverage,
      crashCases: suite.crashCases.length,
      paths: suite.paths.map((p) => ({
        name: p.name,
        origin: p.origin,
        steps: p.steps.map((s) => ({ event: s.event, state: s.state, status: s.status })),
      })),
    };
    out(JSON.stringify(document, jsonReplacer, 2));
    return 0;
  }

  const ambiguous = ambiguousTypes(suite.events);
  const { states, transitions } = suite.coverage;
  const origins = (o: string) => suite.paths.filter((p) => p.origin === o).length;
  out(
    `${suite.name} (version ${version}): ${suite.paths.length} paths ` +
      `(${origins('shortest')} shortest to a state, ${origins('transition')} through a transition, ${origins('simple')} simple), ` +
      `${suite.crashCases.length} crash cases`,
  );
  out(`coverage: ${states.covered.length}/${states.all.length} states, ${transitions.covered.length}/${transitions.all.length} transitions`);
  for (const missing of [...states.missing, ...transitions.missing]) out(`  not covered: ${missing}`);
  out(`events explored: ${[...new Set(suite.events.map((e) => eventLabel(e, ambiguous)))].join(', ')}`);
  for (const path of suite.paths) {
    out('');
    out(path.name);
    const labels = path.steps.map((s, i) => (i === 0 ? '(spawn)' : eventLabel(s.event, ambiguous)));
    const width = Math.max(...labels.map((l) => l.length));
    path.steps.forEach((s, i) => {
      const status = s.status === 'active' ? '' : ` (${s.status})`;
      out(`  ${String(i).padStart(2)}  ${labels[i]!.padEnd(width)}  ${stateLabel(s.state)}${status}`);
    });
  }
  return 0;
}

type Parsed = { help: true } | { error: string } | { machine: string; format: 'text' | 'json'; depth: number | undefined; config: string | undefined };

/**
 * A config's machine: one sample of each event type it handles, made from its zod schema (the
 * least value of each required field); a type whose schema refuses the sample is left out.
 */
function configPathOptions(definition: MachineDefinition): PathTestOptions {
  const events = registerMachine(definition).eventTypes.flatMap((type) => {
    const schema = definition.events?.[type];
    if (!schema) return [{ type }];
    let sample: unknown;
    try {
      sample = { ...(sampleOf(z.toJSONSchema(schema, { unrepresentable: 'any' }) as JsonSchema) as object), type };
    } catch {
      sample = { type };
    }
    return schema.safeParse(sample).success ? [sample as { type: string }] : [];
  });
  return { machine: definition, events };
}

function parsePathsArgs(argv: string[]): Parsed {
  let values: { format?: string | undefined; depth?: string | undefined; config?: string | undefined; help?: boolean | undefined };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { format: { type: 'string' }, depth: { type: 'string' }, config: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    }));
  } catch (err) {
    return { error: (err as Error).message };
  }
  if (values.help) return { help: true };
  const { format = 'text', depth } = values;
  if (format !== 'text' && format !== 'json') return { error: `--format must be text or json, not "${format}".` };
  if (depth !== undefined && (!/^\d+$/.test(depth) || Number(depth) > 12)) {
    return { error: `--depth must be a whole number from 0 to 12, not "${depth}".` };
  }
  const [machine, ...more] = positionals;
  if (machine === undefined) return { error: 'Which machine?' };
  if (more.length > 0) return { error: `One machine at a time ("${machine}", then "${more[0]}").` };
  return { machine, format, depth: depth === undefined ? undefined : Number(depth), config: values.config };
}

type JsonSchema = { type?: string | string[]; const?: unknown; enum?: unknown[]; minimum?: number; minLength?: number; properties?: Record<string, JsonSchema>; required?: string[]; anyOf?: JsonSchema[]; oneOf?: JsonSchema[]; default?: unknown };

function sampleOf(schema: JsonSchema): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.default !== undefined) return schema.default;
  if (schema.enum?.length) return schema.enum[0];
  const first = schema.anyOf?.[0] ?? schema.oneOf?.[0];
  if (first) return sampleOf(first);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
    case 'number':
    case 'integer':
      return Math.max(0, schema.minimum ?? 0);
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'null':
      return null;
    case 'object':
      return Object.fromEntries((schema.required ?? []).map((key) => [key, sampleOf(schema.properties?.[key] ?? {})]));
    default:
      return undefined;
  }
}

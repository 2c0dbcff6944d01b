import { agentPathTestOptions } from '../testing/agent-paths.js';
import { ambiguousTypes, eventLabel, jsonReplacer, stateLabel } from '../testing/format.js';
import { pathTests, type PathTestOptions } from '../testing/path-tests.js';

/** The machines `durable-agents paths` knows, with the settings their path tests use. */
const MACHINES: Record<string, () => PathTestOptions> = {
  agent: agentPathTestOptions,
};

export const PATHS_USAGE = `Usage: durable-agents paths <machine> [--format text|json] [--depth N]
Prints the test paths generated from a registered machine's statechart (states and events per step)
and which of its states and transitions they cover.
  --format   text (default) or json
  --depth    also explore simple paths of at most N events (default 4; 0: shortest paths only)
Machines: ${Object.keys(MACHINES).join(', ')}`;

/**
 * `durable-agents paths <machine> [--format json|text] [--depth N]`. `argv` is what follows
 * `paths`; returns the exit code (0, or 2 for a usage error).
 */
export async function runPathsCommand(argv: string[], out: (line: string) => void): Promise<number> {
  const parsed = parseArgs(argv);
  if ('help' in parsed) {
    out(PATHS_USAGE);
    return 0;
  }
  if ('error' in parsed) {
    out(`${parsed.error}\n${PATHS_USAGE}`);
    return 2;
  }
  const options = MACHINES[parsed.machine];
  if (!options) {
    out(`Unknown machine "${parsed.machine}". Known: ${Object.keys(MACHINES).join(', ')}.\n${PATHS_USAGE}`);
    return 2;
  }
  const base = options();
  const suite = pathTests({ ...base, simplePathDepth: parsed.depth ?? base.simplePathDepth });
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

type Parsed = { help: true } | { error: string } | { machine: string; format: 'text' | 'json'; depth: number | undefined };

function parseArgs(argv: readonly string[]): Parsed {
  let machine: string | undefined;
  let format: 'text' | 'json' = 'text';
  let depth: number | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') return { help: true };
    const [flag, inline] = arg.startsWith('--') ? (arg.split(/=(.*)/s, 2) as [string, string | undefined]) : [arg, undefined];
    if (flag === '--format' || flag === '--depth') {
      const value = inline ?? argv[++i];
      if (value === undefined) return { error: `${flag} needs a value.` };
      if (flag === '--format') {
        if (value !== 'text' && value !== 'json') return { error: `--format must be text or json, not "${value}".` };
        format = value;
      } else {
        if (!/^\d+$/.test(value) || Number(value) > 12) return { error: `--depth must be a whole number from 0 to 12, not "${value}".` };
        depth = Number(value);
      }
      continue;
    }
    if (arg.startsWith('-')) return { error: `Unknown option "${arg}".` };
    if (machine !== undefined) return { error: `One machine at a time ("${machine}", then "${arg}").` };
    machine = arg;
  }
  if (machine === undefined) return { error: 'Which machine?' };
  return { machine, format, depth };
}

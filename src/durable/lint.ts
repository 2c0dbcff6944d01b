/**
 * The durability linter: what in a user's XState machine the runtime cannot make durable, or what
 * will surprise once agents are checkpointed and restored. Run at registration (errors refuse the
 * machine, warnings are logged) and by `durable-agents lint <machine>`; docs/machines.md, "The
 * durability linter", says what each code means and what to do.
 *
 * Severity rule: an **error** is something the runtime cannot run or restore correctly (a restored
 * agent would be broken, stale, or differ from the one that was checkpointed, or XState cannot run
 * it as written); a **warning** is something that works today but is fragile (an edit of the chart
 * breaks restores) or surprising (an agent that stops on a failure, or waits forever).
 *
 * What it cannot see: inline logic spawned with `spawn` inside `assign` (registered logic it checks
 * whether a chart names it or not), actions chosen at run time (`enqueueActions`), and the context
 * after the initial one.
 */
import { createActor, type AnyStateMachine, type AnyStateNode } from 'xstate';
import type { MachineDefinition } from './definition.js';

export type LintSeverity = 'error' | 'warning';

export interface LintFinding {
  severity: LintSeverity;
  /** Stable, snake_case: what `MachineDefinition.lint.ignore` names. */
  code: LintCode;
  /** The state node: the machine id, then the state keys (`agent.callingLLM.requesting`). */
  path: string;
  /** A sentence for a person: what is wrong and what to do instead. */
  message: string;
}

/** Every code the linter reports, with its severity. */
export const LINT_CODES = {
  // Errors: the runtime cannot run or restore it correctly.
  /** A src that `setup({ actors })` does not register: XState cannot start it (the agent goes to status error). */
  unregistered_actor: 'error',
  /** Inline logic given to `spawnChild`: persisted silently, restored as a broken child (the agent goes to status error). */
  inline_spawned_actor: 'error',
  /** A child machine (or fromTransition logic): its state changes inside its own actor, which no checkpoint sees. */
  stateful_child: 'error',
  /** An initial context JSON does not hold as it is: a restore brings back something else, or the checkpoint cannot be written. */
  context_not_json: 'error',
  /** A delay name `setup({ delays })` does not have: XState fires it at once. */
  unknown_delay: 'error',
  // Warnings: it works, but is fragile on edit or surprising.
  /** An invoke without an explicit id: its position-based id is in every checkpoint, and an edit renames it (an unchanged chart restores). */
  invoke_without_id: 'warning',
  /**
   * Inline logic given to `invoke`: gated on commit like a registered actor, but checkpoints name it
   * by its position in the chart. A warning: XState finds it again in an unchanged chart, so it
   * restores; an edited chart may restore another actor or none.
   */
  inline_invoked_actor: 'warning',
  /** An invoke whose failure nothing handles: the agent goes to status error (as it would without the runtime; some actors never fail). */
  invoke_without_error: 'warning',
  /** A spawnChild without an id: the child is kept under the id "undefined", and a second one replaces it. */
  spawn_without_id: 'warning',
  /** A non-final state no event leaves or acts in: an agent there waits forever. */
  dead_end: 'warning',
} as const satisfies Record<string, LintSeverity>;

export type LintCode = keyof typeof LINT_CODES;

/** The codes a definition may ignore (`lint.ignore`): warnings only. */
export type LintWarningCode = { [K in LintCode]: (typeof LINT_CODES)[K] extends 'warning' ? K : never }[LintCode];

export interface LintOptions {
  /** The spawn input the initial context is computed from (default `{}`, as the runtime spawns without one). */
  input?: unknown;
  /** False: do not compute the initial context (no input is known that the machine takes). Default true. */
  checkContext?: boolean;
}

/** Lints a machine: every finding, in chart order (the context's last). */
export function lintMachine(machine: AnyStateMachine, options: LintOptions = {}): LintFinding[] {
  const linter = new Linter(machine);
  linter.visit(machine.root);
  linter.checkRegisteredActors();
  if (options.checkContext !== false) linter.checkContext('input' in options ? options.input : {});
  return linter.findings;
}

/**
 * Lints a definition as registration does: its input schema's reading of `{}` is the input (no
 * context check when the schema refuses `{}`), and the warnings it ignores (`lint.ignore`) are left out.
 * Errors cannot be ignored.
 */
export function lintDefinition(def: Pick<MachineDefinition, 'machine' | 'input' | 'lint'>): LintFinding[] {
  let options: LintOptions = {};
  if (def.input) {
    const parsed = def.input.safeParse({});
    options = parsed.success ? { input: parsed.data } : { checkContext: false };
  }
  const ignored = new Set<string>(def.lint?.ignore ?? []);
  return lintMachine(def.machine, options).filter((f) => f.severity === 'error' || !ignored.has(f.code));
}

type Logic = Record<string, unknown>;

/** What XState's built-in actions look like once created: functions carrying their arguments. */
interface BuiltinAction {
  type?: unknown;
  id?: unknown;
  src?: unknown;
  delay?: unknown;
}

class Linter {
  readonly findings: LintFinding[] = [];
  private readonly actors: Record<string, unknown>;
  private readonly delays: Record<string, unknown>;
  private readonly actions: Record<string, unknown>;
  /** Registered actors an invoke or spawnChild names (checked there). */
  private readonly checkedActors = new Set<string>();

  constructor(private readonly machine: AnyStateMachine) {
    this.actors = (machine.implementations.actors ?? {}) as Record<string, unknown>;
    this.delays = (machine.implementations.delays ?? {}) as Record<string, unknown>;
    this.actions = (machine.implementations.actions ?? {}) as Record<string, unknown>;
  }

  private report(code: LintCode, node: AnyStateNode, message: string): void {
    this.findings.push({ severity: LINT_CODES[code], code, path: pathOf(this.machine, node), message });
  }

  visit(node: AnyStateNode): void {
    if (node.type !== 'history') {
      this.checkInvokes(node);
      this.checkActions(node);
      this.checkAfter(node);
      this.checkDeadEnd(node);
    }
    for (const child of Object.values(node.states)) this.visit(child);
  }

  private checkInvokes(node: AnyStateNode): void {
    const configs = toArray(node.config.invoke) as { id?: unknown; src?: unknown }[];
    node.invoke.forEach((invoke, i) => {
      const config = configs[i] ?? {};
      const given = config.src;
      const id = invoke.id;
      if (typeof given === 'string') {
        if (!(given in this.actors)) {
          this.report(
            'unregistered_actor',
            node,
            `Invoke "${id}" names the actor "${given}", which setup({ actors }) does not register: XState cannot start it, and the agent goes to status error. ` +
              'Register it under that name in setup({ actors }) (or in .provide({ actors })).',
          );
        } else {
          this.checkChildLogic(node, `Invoke "${id}"`, `"${given}"`, this.actors[given], given);
        }
      } else {
        this.report(
          'inline_invoked_actor',
          node,
          `Invoke "${id}" runs inline actor logic: checkpoints name it by its position in the chart ("${String(invoke.src)}"), ` +
            'so a chart edited while agents run it restores another actor or none. Register it in setup({ actors }) and invoke it by name.',
        );
        this.checkChildLogic(node, `Invoke "${id}"`, 'its inline logic', given);
      }
      if (config.id === undefined) {
        this.report(
          'invoke_without_id',
          node,
          `An invoke of "${describeSrc(given)}" has no id: XState names the child "${id}" after its position in the chart, and that name is in every checkpoint ` +
            'and in its done and error events, so adding or moving a state or an invoke renames it and a restore loses the running child. Give the invoke an explicit id.',
        );
      }
      if (!handles(node, `xstate.error.actor.${id}`)) {
        this.report(
          'invoke_without_error',
          node,
          `Invoke "${id}" has no onError: if the actor fails, nothing handles xstate.error.actor.${id} and the whole agent goes to status error. ` +
            'Add onError (to a failed state, a retry, or the next state if a failure ends it all the same).',
        );
      }
    });
  }

  /**
   * Registered actors no invoke or spawnChild names: `spawn` in `assign` (or an action chosen at run
   * time) may still start them, which the chart does not show. A stateful one is refused all the same.
   */
  checkRegisteredActors(): void {
    for (const [name, logic] of Object.entries(this.actors)) {
      if (this.checkedActors.has(name)) continue;
      this.checkChildLogic(this.machine.root, `The actor "${name}" of setup({ actors }) (no invoke names it: spawn in assign may start it)`, `"${name}"`, logic);
    }
  }

  /** A child must be a leaf actor: one with a `start` of its own (fromPromise, fromCallback, fromObservable), not a machine. */
  private checkChildLogic(node: AnyStateNode, who: string, what: string, logic: unknown, name?: string): void {
    if (name !== undefined) this.checkedActors.add(name);
    if (!logic || typeof logic !== 'object') return;
    const l = logic as Logic;
    const kind = 'root' in l ? 'a state machine' : typeof l.start !== 'function' && typeof l.transition === 'function' ? 'transition logic (fromTransition)' : undefined;
    if (!kind) return;
    this.report(
      'stateful_child',
      node,
      `${who} runs ${what}, ${kind}: its state changes inside its own actor, where the runtime's checkpoints cannot see it (a restored agent gets a stale child), ` +
        'and what it invokes is not gated on commit. Keep agents flat: make the child a leaf actor (fromPromise, fromCallback, fromObservable), or fold its states into this chart.',
    );
  }

  /** spawnChild and delayed events in entry, exit and transition actions (named ones resolved through setup({ actions })). */
  private checkActions(node: AnyStateNode): void {
    const transitions = [...node.transitions.values()].flat();
    const lists: (readonly unknown[])[] = [node.entry, node.exit, ...transitions.map((t) => t.actions), ...(node.always ?? []).map((t) => t.actions)];
    for (const list of lists) {
      for (const action of list) {
        const resolved = this.resolveAction(action);
        if (resolved.type === 'xstate.spawnChild') this.checkSpawn(node, resolved);
        else if ((resolved.type === 'xstate.raise' || resolved.type === 'xstate.sendTo') && resolved.delay !== undefined) {
          // The raises XState adds to entry for `after` are checked with `after`.
          if (typeof resolved.id === 'string' && resolved.id.startsWith('xstate.after.')) continue;
          this.checkDelay(node, resolved.delay, 'A delayed event');
        }
      }
    }
  }

  private resolveAction(action: unknown): BuiltinAction {
    let found = action;
    if (typeof action === 'string') found = this.actions[action];
    else if (action && typeof action === 'object' && typeof (action as { type?: unknown }).type === 'string') {
      found = this.actions[(action as { type: string }).type];
    }
    return typeof found === 'function' ? (found as BuiltinAction) : {};
  }

  private checkSpawn(node: AnyStateNode, spawn: BuiltinAction): void {
    const src = spawn.src;
    if (typeof src === 'string') {
      if (!(src in this.actors)) {
        this.report(
          'unregistered_actor',
          node,
          `spawnChild names the actor "${src}", which setup({ actors }) does not register: XState cannot start it. Register it under that name in setup({ actors }).`,
        );
      } else {
        this.checkChildLogic(node, `spawnChild("${src}")`, `"${src}"`, this.actors[src], src);
      }
    } else {
      this.report(
        'inline_spawned_actor',
        node,
        'spawnChild is given inline actor logic: its checkpoint cannot name that logic, so a restored agent gets a broken child and goes to status error. ' +
          'Register the logic in setup({ actors }) and spawn it by name.',
      );
      this.checkChildLogic(node, 'spawnChild', 'its inline logic', src);
    }
    if (spawn.id === undefined) {
      this.report(
        'spawn_without_id',
        node,
        `spawnChild(${typeof src === 'string' ? `"${src}"` : '…'}) has no id: XState keeps the child, in the snapshot and in every checkpoint, under the id "undefined", ` +
          'so a second spawn replaces the first and nothing can address it. Give it an id: spawnChild(src, { id }).',
      );
    }
  }

  private checkAfter(node: AnyStateNode): void {
    const seen = new Set<unknown>();
    for (const transition of node.after) {
      if (seen.has(transition.delay)) continue;
      seen.add(transition.delay);
      this.checkDelay(node, transition.delay, `after ${JSON.stringify(transition.delay)}`);
    }
  }

  /**
   * A delay is a number or a name of setup({ delays }). A function given inline to raise/sendTo is
   * computed when the event is scheduled, like a named one: nothing to report.
   */
  private checkDelay(node: AnyStateNode, delay: unknown, what: string): void {
    if (typeof delay !== 'string' || delay in this.delays) return;
    this.report(
      'unknown_delay',
      node,
      `${what} names the delay "${delay}", which setup({ delays }) does not have: XState fires it at once. Give a number of milliseconds, or define the delay in setup({ delays }).`,
    );
  }

  /** An atomic, non-final state where no event does anything (no transition here or above, eventless, delayed or done/error). */
  private checkDeadEnd(node: AnyStateNode): void {
    if (node.type !== 'atomic') return;
    for (let n: AnyStateNode | undefined = node; n; n = n.parent) {
      if (n.transitions.size > 0 || (n.always?.length ?? 0) > 0) return;
    }
    this.report(
      'dead_end',
      node,
      `State "${pathOf(this.machine, node)}" is not final and nothing leaves it or happens in it: no event, no eventless or delayed transition, no done or error of an invoke. ` +
        "An agent there waits forever (and stays active). Mark it type: 'final' if the agent is done there, or give it a way out.",
    );
  }

  checkContext(input: unknown): void {
    let context: unknown;
    try {
      const snapshot = quietly(() => createActor(this.machine, { input }).getSnapshot()) as { status: string; context: unknown };
      // The context factory (or an entry action) threw for this input: a spawn with it fails, and there is nothing to check.
      if (snapshot.status === 'error') return;
      context = snapshot.context;
    } catch {
      return;
    }
    const problems: string[] = [];
    findNonJson(context, 'context', [], problems);
    if (problems.length === 0) return;
    const shown = problems.slice(0, 5).join('; ');
    const more = problems.length > 5 ? `; and ${problems.length - 5} more` : '';
    this.report(
      'context_not_json',
      this.machine.root,
      `The initial context is not plain JSON, which is what a checkpoint stores: ${shown}${more}. ` +
        'Keep context to null, booleans, finite numbers, strings, arrays and plain objects: an epoch-ms number for a time, an array for a set, ' +
        'an object for a map, a message or {kind, message} for an error.',
    );
  }
}

/**
 * Runs `compute` without XState's development-build warnings: entering the initial state warns of
 * what the linter reports already (an actor type it cannot find), and nothing else runs meanwhile.
 */
function quietly<T>(compute: () => T): T {
  const warn = console.warn;
  console.warn = () => {};
  try {
    return compute();
  } finally {
    console.warn = warn;
  }
}

/** What in `value` a JSON round trip would not give back as it is, each as "<where> is …". */
function findNonJson(value: unknown, where: string, ancestors: object[], out: string[]): void {
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined': // an object key holding undefined is left out, and reads back as undefined
      return;
    case 'number':
      if (!Number.isFinite(value)) out.push(`${where} is ${value} (stored as null)`);
      return;
    case 'bigint':
      out.push(`${where} is a BigInt (JSON cannot hold one: writing the checkpoint throws)`);
      return;
    case 'function':
      out.push(`${where} is a function (left out of the checkpoint: a restored agent does not have it)`);
      return;
    case 'symbol':
      out.push(`${where} is a symbol (left out of the checkpoint)`);
      return;
  }
  if (value === null) return;
  const object = value as object;
  if (ancestors.includes(object)) {
    out.push(`${where} refers back to an object that holds it (a cycle: writing the checkpoint throws)`);
    return;
  }
  if (Array.isArray(object)) {
    const inner = [...ancestors, object];
    for (let i = 0; i < object.length; i++) {
      if (!(i in object) || object[i] === undefined) out.push(`${where}[${i}] is ${i in object ? 'undefined' : 'a hole'} (stored as null)`);
      else findNonJson(object[i], `${where}[${i}]`, inner, out);
    }
    return;
  }
  const proto = Object.getPrototypeOf(object) as object | null;
  if (proto !== Object.prototype && proto !== null) {
    out.push(`${where} is ${describeInstance(object)}`);
    return;
  }
  if (typeof (object as { toJSON?: unknown }).toJSON === 'function') {
    out.push(`${where} has a toJSON method (stored as what it returns)`);
    return;
  }
  const inner = [...ancestors, object];
  for (const [key, item] of Object.entries(object)) findNonJson(item, `${where}${/^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`}`, inner, out);
}

function describeInstance(object: object): string {
  if (object instanceof Date) return 'a Date (stored as an ISO string: a restored agent reads a string)';
  if (object instanceof Map) return 'a Map (stored as {}: its entries are lost)';
  if (object instanceof Set) return 'a Set (stored as {}: its members are lost)';
  if (object instanceof Error) return 'an Error (stored as {}: its message is not an own enumerable property)';
  if (object instanceof RegExp) return 'a RegExp (stored as {})';
  const name = (object.constructor as { name?: unknown } | undefined)?.name;
  return `an instance of ${typeof name === 'string' && name ? name : 'a class'} (restored as a plain object, without its class or methods)`;
}

/** Does this node or an ancestor take the event, by its type or a wildcard (`*`, `xstate.error.*`)? */
function handles(node: AnyStateNode, eventType: string): boolean {
  for (let n: AnyStateNode | undefined = node; n; n = n.parent) {
    for (const key of n.transitions.keys()) {
      if (key === eventType || key === '*') return true;
      if (key.endsWith('.*') && eventType.startsWith(key.slice(0, -1))) return true;
    }
  }
  return false;
}

function pathOf(machine: AnyStateMachine, node: AnyStateNode): string {
  return [machine.root.id, ...node.path].join('.');
}

function describeSrc(src: unknown): string {
  return typeof src === 'string' ? src : 'inline logic';
}

function toArray<T>(value: T | readonly T[] | undefined): readonly T[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? (value as readonly T[]) : [value as T];
}

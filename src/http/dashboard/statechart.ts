/**
 * A statechart as a diagram: the states and transitions of a machine definition, laid out by ELK
 * (layered, hierarchical) on the server. The result is plain geometry in absolute coordinates; the
 * SVG is drawn by statechart-svg.tsx and the current state is highlighted by the client script
 * through each state's `data-state` path (`callingLLM.requesting`).
 */
import type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js';
import type { AnyStateMachine, StateNode } from 'xstate';
import { COMMITTED_EVENT } from '../../durable/commit-barrier.js';
import { guardName } from '../../durable/definition.js';

export interface ChartState {
  /** Dotted path from the root, e.g. `callingLLM.requesting`: what `data-state` carries. */
  id: string;
  name: string;
  kind: 'atomic' | 'compound' | 'final' | 'parallel' | 'history';
  x: number;
  y: number;
  width: number;
  height: number;
  depth: number;
}

export interface ChartInitial {
  x: number;
  y: number;
}

export interface ChartEdge {
  id: string;
  from: string;
  to: string;
  /** Polyline: start, bend points, end. */
  points: { x: number; y: number }[];
  label: string;
  labelBox?: { x: number; y: number; width: number; height: number };
  /** Initial-state arrows start at a dot and carry no label. */
  initial: boolean;
}

export interface ChartDiagram {
  width: number;
  height: number;
  states: ChartState[];
  initials: ChartInitial[];
  edges: ChartEdge[];
  /** Events taken without leaving the state (no target), by the state that handles them. */
  internal: { state: string; events: string[] }[];
}

// The bundled build runs ELK in this thread (no worker): what a server wants. It is a CommonJS
// module whose typings describe the ES default export. Loaded on the first diagram, not at start-up
// (parsing it takes ~140 ms, which every restart would otherwise pay before recovering agents).
type ElkConstructor = typeof import('elkjs/lib/elk-api.js').default;
let elk: Promise<InstanceType<ElkConstructor>> | undefined;
function layoutEngine(): Promise<InstanceType<ElkConstructor>> {
  return (elk ??= import('elkjs/lib/elk.bundled.js').then((module: unknown) => {
    const exported = (module as { default?: unknown }).default ?? module;
    const ELK = ((exported as { default?: ElkConstructor }).default ?? exported) as ElkConstructor;
    return new ELK();
  }));
}

const FONT_PX = 13;
const LABEL_FONT_PX = 11;
const INITIAL_DOT = 10;

/** Rough text widths for the layout (the SVG uses a system sans-serif font of these sizes). */
const textWidth = (text: string, px: number) => Math.ceil(text.length * px * 0.6);

/** `xstate.done.actor.llm` → `llm done`; `runtime.committed` → `committed`; guards in brackets; `always` for eventless transitions. */
export function transitionLabel(eventType: string, guard: unknown): string {
  let label = eventType;
  const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(eventType);
  if (actor) label = `${actor[2]} ${actor[1]}`;
  else if (eventType === '') label = 'always';
  else if (eventType === COMMITTED_EVENT) label = 'committed';
  else if (eventType.startsWith('xstate.after.')) label = `after ${eventType.slice('xstate.after.'.length).split('.')[0]}`;
  const name = guardName(guard);
  return name ? `${label} [${name}]` : label;
}


const idOf = (node: StateNode<any, any>) => node.path.join('.');

interface Transition {
  from: string;
  to: string;
  label: string;
}

/** Every targeted transition of the machine, with the same source and target merged into one edge. */
function collectTransitions(machine: AnyStateMachine): { transitions: Transition[]; internal: ChartDiagram['internal'] } {
  const byPair = new Map<string, Transition>();
  const internal: ChartDiagram['internal'] = [];
  const visit = (node: StateNode<any, any>) => {
    const targetless: string[] = [];
    const definitions = [
      ...[...node.transitions.entries()].flatMap(([type, list]) => list.map((t) => ({ type, t }))),
      ...(node.always ?? []).map((t) => ({ type: '', t })),
    ];
    for (const { type, t } of definitions) {
      const label = transitionLabel(type, t.guard);
      if (!t.target?.length) {
        if (!targetless.includes(label)) targetless.push(label);
        continue;
      }
      for (const target of t.target) {
        const from = idOf(node);
        const to = idOf(target);
        const key = `${from}\u0000${to}`;
        const existing = byPair.get(key);
        if (existing) {
          if (!existing.label.split(' / ').includes(label)) existing.label += ` / ${label}`;
        } else byPair.set(key, { from, to, label });
      }
    }
    if (targetless.length) internal.push({ state: idOf(node), events: targetless });
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(machine.root);
  return { transitions: [...byPair.values()], internal };
}

/** Lays out the machine's statechart. Pure of the runtime; the same machine always gives the same picture. */
export async function layoutStatechart(machine: AnyStateMachine): Promise<ChartDiagram> {
  const { transitions, internal } = collectTransitions(machine);
  const edges: ElkExtendedEdge[] = [];
  const labels = new Map<string, string>();
  const initialEdges = new Set<string>();

  const toElk = (node: StateNode<any, any>): ElkNode => {
    const children = Object.values(node.states);
    const id = idOf(node);
    if (!children.length) {
      return { id, width: Math.max(96, textWidth(node.key, FONT_PX) + 32), height: 38 };
    }
    const elkChildren = children.map(toElk);
    const initialTarget = node.initial?.target?.[0];
    if (initialTarget) {
      const dot = `${id}.__initial`;
      elkChildren.unshift({ id: dot, width: INITIAL_DOT, height: INITIAL_DOT });
      const edgeId = `e:${dot}`;
      edges.push({ id: edgeId, sources: [dot], targets: [idOf(initialTarget)] });
      initialEdges.add(edgeId);
    }
    return {
      id,
      children: elkChildren,
      layoutOptions: { 'elk.padding': `[top=${node.path.length ? 34 : 16},left=16,bottom=16,right=16]` },
    };
  };

  const root = toElk(machine.root);
  transitions.forEach((t, i) => {
    const id = `e${i}`;
    labels.set(id, t.label);
    edges.push({
      id,
      sources: [t.from],
      targets: [t.to],
      labels: [{ text: t.label, width: textWidth(t.label, LABEL_FONT_PX) + 6, height: LABEL_FONT_PX + 5 }],
    });
  });
  // The root is the machine itself: its id in ELK must not be empty.
  const graph: ElkNode = {
    ...root,
    id: '__root',
    edges,
    layoutOptions: {
      ...root.layoutOptions,
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.edgeRouting': 'ORTHOGONAL',
      'elk.layered.spacing.nodeNodeBetweenLayers': '36',
      'elk.spacing.nodeNode': '28',
      'elk.spacing.edgeLabel': '4',
      'elk.layered.nodePlacement.strategy': 'BRANDES_KOEPF',
      // States in the order they are written: the initial state on top, edges back up are the loops.
      'elk.layered.cycleBreaking.strategy': 'MODEL_ORDER',
      'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
      'elk.json.shapeCoords': 'ROOT',
      'elk.json.edgeCoords': 'ROOT',
    },
  };
  const laid = await (await layoutEngine()).layout(graph);

  const states: ChartState[] = [];
  const initials: ChartInitial[] = [];
  const nodesById = new Map<string, StateNode<any, any>>();
  const index = (node: StateNode<any, any>) => {
    nodesById.set(idOf(node), node);
    Object.values(node.states).forEach(index);
  };
  index(machine.root);
  const collect = (node: ElkNode, depth: number) => {
    for (const child of node.children ?? []) {
      const x = child.x ?? 0;
      const y = child.y ?? 0;
      if (child.id.endsWith('.__initial')) {
        initials.push({ x: x + INITIAL_DOT / 2, y: y + INITIAL_DOT / 2 });
        continue;
      }
      const stateNode = nodesById.get(child.id);
      states.push({
        id: child.id,
        name: stateNode?.key ?? child.id,
        kind: (stateNode?.type as ChartState['kind'] | undefined) ?? 'atomic',
        x,
        y,
        width: child.width ?? 0,
        height: child.height ?? 0,
        depth,
      });
      collect(child, depth + 1);
    }
  };
  collect(laid, 0);

  const chartEdges: ChartEdge[] = (laid.edges ?? []).flatMap((edge) => {
    const section = (edge as ElkExtendedEdge).sections?.[0];
    if (!section) return [];
    const label = (edge as ElkExtendedEdge).labels?.[0];
    const result: ChartEdge = {
      id: edge.id,
      from: (edge as ElkExtendedEdge).sources[0] ?? '',
      to: (edge as ElkExtendedEdge).targets[0] ?? '',
      points: [section.startPoint, ...(section.bendPoints ?? []), section.endPoint],
      label: labels.get(edge.id) ?? '',
      initial: initialEdges.has(edge.id),
    };
    if (label && label.x !== undefined && label.y !== undefined) {
      result.labelBox = { x: label.x, y: label.y, width: label.width ?? 0, height: label.height ?? 0 };
    }
    return [result];
  });

  return { width: laid.width ?? 0, height: laid.height ?? 0, states, initials, edges: chartEdges, internal };
}

/**
 * The state paths a state value makes active: `{callingLLM: 'requesting'}` →
 * `['callingLLM', 'callingLLM.requesting']`. The client script has the same function.
 */
export function activeStatePaths(value: unknown, prefix = ''): string[] {
  if (typeof value === 'string') return [prefix + value];
  if (!value || typeof value !== 'object') return [];
  return Object.entries(value as Record<string, unknown>).flatMap(([key, child]) => [
    prefix + key,
    ...activeStatePaths(child, `${prefix}${key}.`),
  ]);
}


import type { EventObject } from 'xstate';
import type { ChildDoneEvent, ChildFailedEvent, ChildResponseEvent } from '../durable/child-events.js';
import type { SpawnedAgent } from './agent-probe.js';

/**
 * What the child agents of one machine may report to the parent (child-events.ts), one sample per
 * entry; each sample becomes one event per child of that machine the paths spawn, with its
 * `agentId`. In path runs no child exists (the path's runtime drops spawns: `childAgents: 'ignore'`):
 * these reports stand for what they would send, and go into the parent's inbox as real ones do
 * (`runtime.report`, under the child's key).
 */
export interface ChildReports {
  /** Outputs for `agent.done` (the child reached a final state). */
  done?: readonly unknown[];
  /** Errors for `agent.failed` (the child ended in error, or could not be spawned). */
  failed?: readonly ChildFailedEvent['error'][];
  /** Answers for `agent.response` (the reference agent answered one of its tasks). */
  response?: readonly Omit<ChildResponseEvent, 'type' | 'agentId'>[];
}

/** The reports of every spawned child whose machine has samples, child by child in order of spawn. */
export function childReportEvents(children: Readonly<Record<string, ChildReports>>, spawned: readonly SpawnedAgent[]): EventObject[] {
  return spawned.flatMap(({ machine, id }) => {
    const reports = children[machine];
    if (!reports) return [];
    const response = (reports.response ?? []).map((sample): ChildResponseEvent => ({ type: 'agent.response', agentId: id, ...sample }));
    const done = (reports.done ?? []).map((output): ChildDoneEvent => ({ type: 'agent.done', agentId: id, output }));
    const failed = (reports.failed ?? []).map((error): ChildFailedEvent => ({ type: 'agent.failed', agentId: id, error }));
    return [...response, ...done, ...failed];
  });
}

/** Each child once (by id), in order of first spawn. */
export function uniqueChildren(spawns: readonly SpawnedAgent[]): SpawnedAgent[] {
  const byId = new Map<string, SpawnedAgent>();
  for (const spawn of spawns) if (!byId.has(spawn.id)) byId.set(spawn.id, spawn);
  return [...byId.values()];
}

/** Throws on a `children` key that names no machine the paths spawn. */
export function checkChildKeys(children: Readonly<Record<string, ChildReports>>, spawned: readonly SpawnedAgent[]): void {
  const machines = new Set(spawned.map((s) => s.machine));
  for (const key of Object.keys(children)) {
    if (!machines.has(key)) {
      throw new Error(`children.${key}: no path spawns an agent of machine "${key}" (spawned: ${[...machines].join(', ') || 'none'}).`);
    }
  }
}

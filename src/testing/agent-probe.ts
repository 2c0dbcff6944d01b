import type { AnyActorRef, EventObject, InspectionEvent } from 'xstate';
import { SPAWN_EVENT, type SpawnEmit } from '../durable/spawn-agent.js';
import { ControlledDelays } from './controlled-delays.js';
import { toJsonValue } from './format.js';

/** A child agent a step asked for (`spawnAgent`), as the chart names it. */
export interface SpawnedAgent {
  machine: string;
  id: string;
  /** Its spawn input, as JSON. */
  input: unknown;
}

/** One spawn the agent's actor made in one process, as the runner saw it. */
export interface SpawnRecord extends SpawnedAgent {
  /** 1 for the first process, 2 for the one restored after the simulated crash. */
  incarnation: number;
  /** The path step whose transition made it (0: entering the initial state). */
  step: number;
}

/**
 * What a path run sees of its agent's actor inside the runtime, through the runtime's `inspect`
 * option (XState's inspection API, which the runtime hands every agent actor): which path step each
 * of its transitions is, the child agents it spawns, and its delays, which it takes over so that
 * they fire only at a path's "after …" step (controlled-delays.ts). One per process.
 *
 * The spawns are recorded here, and the path's runtime drops them (`childAgents: 'ignore'`). So no
 * child is created or runs in a path run (nor refused: a refused spawn is reported to the
 * parent as `agent.failed`, a transition the path does not expect); what children would report, a
 * path says with `children`. A spawn's being committed with its checkpoint is the runtime's own
 * guarantee, tested with real children in test/runtime and test/e2e.
 *
 * A step is a snapshot: the runtime commits one checkpoint per new snapshot, so counting the distinct
 * snapshots the actor goes through numbers its transitions as the path does. A spawn (an emitted
 * event, a deferred effect) runs once the new snapshot is in place, before XState reports it, so it
 * is counted against the snapshot the actor holds when it emits.
 */
export class AgentProbe {
  readonly spawns: SpawnRecord[] = [];
  readonly delays: ControlledDelays;
  /** Set when the agent's actor did something the probe cannot follow. */
  problem: string | undefined;
  private actor: AnyActorRef | undefined;
  private last: unknown;
  private step: number;

  /** @param firstStep the step of the actor's first snapshot: 0 at spawn, k when restored from step k's checkpoint. */
  constructor(
    private readonly agentId: string,
    readonly incarnation: number,
    firstStep: number,
  ) {
    this.step = firstStep - 1;
    this.delays = new ControlledDelays(incarnation, () => this.stepOf(this.actor?.getSnapshot()));
  }

  /** For `createRuntime({ inspect })`: the agent's actor is every root actor with the agent's id. */
  readonly inspect = (event: InspectionEvent): void => {
    const ref = event.actorRef as AnyActorRef;
    if (event.type === '@xstate.actor') {
      if (ref.id !== this.agentId || ref.sessionId !== event.rootId) return;
      if (this.actor) {
        this.problem = 'the runtime created the agent\'s actor a second time in one process (a reload): the path cannot follow it';
        return;
      }
      this.actor = ref;
      try {
        this.delays.takeOver(ref);
        this.keepSpawns(ref);
      } catch (err) {
        // The runtime swallows what its inspect callback throws: say it at the next step instead.
        this.problem = `the path runner could not take over the agent's actor (${err instanceof Error ? err.message : String(err)}): its delays and spawns are not under the path's control`;
      }
    } else if (event.type === '@xstate.snapshot' && ref === this.actor) {
      this.stepOf(event.snapshot);
    }
  };

  /** The spawns of step k, as recorded in this process. */
  spawnsAt(step: number): SpawnRecord[] {
    return this.spawns.filter((s) => s.step === step);
  }

  /** Records the actor's spawns (the path's runtime drops them: `childAgents: 'ignore'`). */
  private keepSpawns(ref: AnyActorRef): void {
    ref.on(SPAWN_EVENT, (spawn: EventObject) => this.spawned(spawn as unknown as SpawnEmit));
  }

  private spawned(spawn: SpawnEmit): void {
    const step = this.stepOf(this.actor?.getSnapshot());
    this.spawns.push({ incarnation: this.incarnation, step, machine: spawn.machine, id: spawn.id, input: toJsonValue(spawn.input) ?? null });
  }

  private stepOf(snapshot: unknown): number {
    if (snapshot !== undefined && snapshot !== this.last) {
      this.last = snapshot;
      this.step++;
    }
    return this.step;
  }
}

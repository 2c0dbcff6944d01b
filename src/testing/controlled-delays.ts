import type { ActorSystem, AnyActorRef, EventObject } from 'xstate';
import { afterLabel } from './delays.js';
import { PathTestError } from './path-test-error.js';

/** One delay the agent's actor scheduled in one process, as the runner saw it. */
export interface DelayArm {
  /** 1 for the first process, 2 for the one restored after the simulated crash. */
  incarnation: number;
  /** The path step whose transition scheduled it; for a restored process's re-arm, the step restored from. */
  step: number;
  /** The scheduler's id (for `after`, the event type). */
  id: string;
  event: string;
  /** Epoch ms it would fire at by the wall clock (the runtime keeps the deadline; this is read beside it). */
  at: number;
}

interface Armed {
  id: string;
  source: AnyActorRef;
  event: EventObject;
  /** XState's timer callback: drops the scheduler's record of the delay and delivers its event. */
  fire?: () => void;
}

/**
 * The agent's delays in a path run: scheduled by the runtime exactly as in production (stored with
 * their checkpoint, re-armed from it after a restore), but never due on their own; a path's
 * "after …" step fires one. Nothing else would do: a real 60 s deadline would stall the run, and a
 * short one would fire in the middle of another step.
 *
 * It takes over the clock of the agent's actor system, which is the runtime's own per-agent clock
 * (durable-timers.ts), when the actor is created and before the runtime attaches its timers to the
 * system's scheduler. What that relies on, all read in XState 5 and the runtime:
 * - the scheduler calls `system._clock.setTimeout` once per schedule, inside `scheduler.schedule`,
 *   and the callback it passes drops XState's record and relays the event (what a due timer does);
 * - the runtime wraps `scheduler.schedule`/`cancel` after the actor exists, so the wrapper here is
 *   the inner one and sees the id the runtime stores;
 * - the runtime drops a delay from its durable set when it is cancelled (leaving the state of an
 *   `after` cancels it), which is all its own timer callback does besides relaying.
 */
export class ControlledDelays {
  readonly arms: DelayArm[] = [];
  private readonly armed = new Map<string, Armed>();
  private root: AnyActorRef | undefined;
  private scheduling: Armed | undefined;
  private drawn = 0;

  constructor(
    private readonly incarnation: number,
    private readonly stepNow: () => number,
  ) {}

  /** Takes over the scheduler's clock of this root actor's system. */
  takeOver(root: AnyActorRef): void {
    this.root = root;
    const system = root.system as ActorSystem<any>;
    const clock = system._clock;
    const scheduler = system.scheduler;
    const schedule = scheduler.schedule.bind(scheduler);
    scheduler.schedule = (source, target, event, delay, id) => {
      // XState draws a random id when given none: draw one here, so that it can be fired by it.
      const known = id ?? `path-delay-${++this.drawn}`;
      this.scheduling = { id: known, source, event };
      try {
        schedule(source, target, event, delay, known);
      } finally {
        this.scheduling = undefined;
      }
      if (source === root) this.arms.push({ incarnation: this.incarnation, step: this.stepNow(), id: known, event: event.type, at: Date.now() + delay });
    };
    const realSetTimeout = clock.setTimeout.bind(clock);
    const realClearTimeout = clock.clearTimeout.bind(clock);
    clock.setTimeout = (fire: () => void, ms: number) => {
      const armed = this.scheduling;
      if (!armed) return realSetTimeout(fire, ms) as unknown; // not a scheduled event: leave it to the real clock
      armed.fire = fire;
      this.armed.set(keyOf(armed), armed);
      return { controlled: armed };
    };
    clock.clearTimeout = (handle: unknown) => {
      const controlled = (handle as { controlled?: Armed } | null)?.controlled;
      if (!controlled) return realClearTimeout(handle);
      if (this.armed.get(keyOf(controlled)) === controlled) this.armed.delete(keyOf(controlled));
    };
  }

  /** Event types of the agent's own pending delays, oldest first. */
  pending(): string[] {
    return [...this.armed.values()].filter((a) => a.source === this.root).map((a) => a.event.type);
  }

  /** Makes the agent's pending delay with this event type due now, as its timer would at its deadline. */
  fire(type: string): void {
    const armed = [...this.armed.values()].find((a) => a.source === this.root && a.event.type === type);
    if (!armed?.fire || !this.root) {
      const pending = this.pending().map((t) => afterLabel(t) ?? t);
      throw new PathTestError(
        `no pending delay "${afterLabel(type) ?? type}" to fire (pending: ${pending.join(', ') || 'none'}); ` +
          'a state arms its `after` delays when entered, and a restored agent re-arms those of its checkpoint',
      );
    }
    this.armed.delete(keyOf(armed));
    armed.fire();
    // The transition left the state, which cancelled the delay in the runtime's set as well. Only a
    // delay that is still in it and was not armed again is dropped here, as the runtime's timer would.
    if (!this.armed.has(keyOf(armed))) this.root.system.scheduler.cancel(armed.source, armed.id);
  }
}

function keyOf(armed: Pick<Armed, 'source' | 'id'>): string {
  return `${armed.source.sessionId}.${armed.id}`;
}

/**
 * Durable delays. XState keeps the delayed events a machine schedules (`after`, `raise`/`sendTo`
 * with a `delay`) in its actor system only: a restored actor has none (upstream: statelyai/xstate#5331).
 * This takes over the system's scheduler of one agent: every delay it schedules is also kept here as
 * `{id, at, event, to}` with its absolute deadline, dropped when it fires or is cancelled, and the set
 * goes into the checkpoint of the transition that changed it. A restored agent's delays are
 * scheduled again from that set, for what is left of them (at once when their time has passed).
 *
 * The timing this relies on (XState 5, read in its source and checked by the tests): scheduling and
 * cancelling are deferred effects of a macrostep, run synchronously right after the transition
 * (whose checkpoint is then already built, and not yet written: the committer writes on a later
 * turn), and a firing relays the event from the timer's callback, before that event's transition.
 */
import type { AnyActorRef, AnyEventObject } from 'xstate';
import type { PendingTimer } from '../store/store.js';

/** XState's `createActor({ clock })` option (its type is not exported). */
interface Clock {
  setTimeout(fn: (...args: unknown[]) => void, timeout: number): unknown;
  clearTimeout(id: unknown): void;
}

type Scheduler = {
  schedule(source: AnyActorRef, target: AnyActorRef, event: AnyEventObject, delay: number, id: string | undefined): void;
  cancel(source: AnyActorRef, id: string): void;
};

/** What `attach` keeps of a scheduler it took over: the agent, and XState's own functions it wraps. */
interface Attached {
  timers: DurableTimers;
  root: AnyActorRef;
  schedule: Scheduler['schedule'];
  cancel: Scheduler['cancel'];
}

/**
 * The schedulers taken over, each with its agent. The wrappers below are shared by every agent (and
 * `DurableTimers` is itself the clock, its methods on the prototype): a live agent pays for a few
 * fields, not for closures of its own (memory per live agent is a measured goal).
 */
const attached = new WeakMap<object, Attached>();

function schedule(this: Scheduler, source: AnyActorRef, target: AnyActorRef, event: AnyEventObject, delay: number, givenId: string | undefined): void {
  const a = attached.get(this)!;
  a.timers.scheduled(a, source, target, event, delay, givenId);
}

function cancel(this: Scheduler, source: AnyActorRef, id: string): void {
  const a = attached.get(this)!;
  a.cancel.call(this, source, id);
  a.timers.cancelled(a, source, id);
}

export class DurableTimers implements Clock {
  /** Made on first use: most live agents never schedule a delay. */
  private pendingById: Map<string, PendingTimer> | undefined;
  /** The id being scheduled, for the clock's `setTimeout` that the scheduler calls inside `schedule`. */
  private scheduling: string | undefined;
  private counter = 0;
  /** While the actor stops (passivation, takeover, shutdown), its cancellations are not the machine's. */
  private stopping = false;
  /** While a restored agent's delays are scheduled again: the stored set does not change. */
  private rearming = false;
  /** The child each pending delayed event to a child goes to (by id: the event is delivered to that actor, not to its id). */
  private targets: Map<string, AnyActorRef> | undefined;
  /** A delay fired since the set was last handed to a checkpoint (`list`). */
  private firedUnsaved = false;
  private root: AnyActorRef | undefined;

  /**
   * @param owner told the pending set after the machine schedules or cancels a delay (a deferred
   *   effect of its transition), for that transition's checkpoint to carry it. Not after a firing:
   *   the transition the fired event causes writes the set without it; until that commits, the
   *   stored set still holds it, so a crash in between fires it again after the restore. A firing
   *   whose event wrote no checkpoint of the agent (it changed nothing, or went to a child) is told
   *   (`delayFired`), for a checkpoint of the set alone.
   */
  constructor(private readonly owner: { timersChanged(timers: PendingTimer[]): void; delayFired(eventType: string): void }) {}

  private get pending(): Map<string, PendingTimer> {
    return (this.pendingById ??= new Map());
  }

  /**
   * The clock for `createActor` (XState calls it as a method): real timers whose firing first drops
   * the timer from the set. Node's timers may fire a millisecond before `Date.now()` reaches their
   * deadline; such a one waits the rest, so that no delay fires before its deadline by the wall
   * clock it was stored with.
   */
  setTimeout(fn: (...args: unknown[]) => void, ms: number): unknown {
    const id = this.scheduling;
    const at = Date.now() + ms;
    const handle: { timer?: NodeJS.Timeout } = {};
    const fire = () => {
      const left = at - Date.now();
      if (left > 0) {
        handle.timer = setTimeout(fire, left);
        return;
      }
      const timer = id === undefined ? undefined : this.pendingById?.get(id);
      if (timer) {
        this.pendingById!.delete(timer.id);
        this.firedUnsaved = true;
      }
      fn();
      // Its event changed nothing of the agent (an `after` with actions only, a delayed event to a
      // child): no checkpoint took the set without it, and the store would fire it again after a restore.
      if (timer && this.firedUnsaved) this.owner.delayFired(timer.event.type);
    };
    handle.timer = setTimeout(fire, ms);
    return handle;
  }

  clearTimeout(handle: unknown): void {
    clearTimeout((handle as { timer?: NodeJS.Timeout }).timer);
  }

  /** Takes over the scheduler of the agent's actor system (`root`: the agent's actor). */
  attach(root: AnyActorRef): void {
    this.root = root;
    const scheduler = root.system.scheduler as Scheduler;
    attached.set(scheduler, { timers: this, root, schedule: scheduler.schedule, cancel: scheduler.cancel });
    scheduler.schedule = schedule;
    scheduler.cancel = cancel;
  }

  /** XState's scheduler was asked for a delay (`schedule` above). */
  scheduled(a: Attached, source: AnyActorRef, target: AnyActorRef, event: AnyEventObject, delay: number, givenId: string | undefined): void {
    const { root } = a;
    // XState would draw a random id; one of ours is stored, so that a restored timer keeps it.
    const id = givenId ?? `d${(++this.counter).toString(36)}.${Date.now().toString(36)}`;
    const to = target === root ? undefined : target.id;
    if (source === root && (to === undefined || root.getSnapshot().children?.[to] === target)) {
      this.pending.set(id, { id, at: Date.now() + delay, event: event as PendingTimer['event'], ...(to === undefined ? {} : { to }) });
      if (to !== undefined) (this.targets ??= new Map()).set(id, target);
      if (!this.rearming) this.owner.timersChanged(this.list());
    }
    this.scheduling = id;
    try {
      a.schedule.call(root.system.scheduler, source, target, event, delay, id);
    } finally {
      this.scheduling = undefined;
    }
  }

  /** XState's scheduler cancelled a delay (`cancel` above). */
  cancelled(a: Attached, source: AnyActorRef, id: string): void {
    if (this.stopping || source !== a.root) return;
    if (this.pendingById?.delete(id)) this.owner.timersChanged(this.list());
  }

  /** Schedules again, for what is left of them, the delays of a restored agent's checkpoint. */
  rearm(root: AnyActorRef, timers: readonly PendingTimer[]): void {
    const scheduler = root.system.scheduler as Scheduler;
    const now = Date.now();
    this.rearming = true;
    try {
      this.rearmEach(root, scheduler, timers, now);
    } finally {
      this.rearming = false;
    }
  }

  private rearmEach(root: AnyActorRef, scheduler: Scheduler, timers: readonly PendingTimer[], now: number): void {
    for (const timer of timers) {
      const target = timer.to === undefined ? root : (root.getSnapshot().children?.[timer.to] as AnyActorRef | undefined);
      if (!target) continue; // its child is gone: it could not be delivered live either
      if (timer.id.startsWith(HELD_PREFIX)) {
        // An event the child got at its start, before the checkpoint restored: the child was just
        // started again, and gets it again, now, as part of the restore.
        target.send(reviveRefs(timer.event, root) as AnyEventObject);
        continue;
      }
      const at = timer.at;
      scheduler.schedule(root, target, reviveRefs(timer.event, root) as AnyEventObject, Math.max(0, at - now), timer.id);
      if (timer.to !== undefined) (this.targets ??= new Map()).set(timer.id, target);
      // Keep the original deadline, not now + what was left (they differ by the milliseconds above).
      const kept = this.pendingById?.get(timer.id);
      if (kept) kept.at = at;
    }
  }

  /**
   * An event for a child that has not started yet (it waits for the commit of the checkpoint that
   * invoked it): kept as a delay due now, so the checkpoint holds it and a restore delivers it to
   * the child started again. Returns its id.
   */
  hold(root: AnyActorRef, child: AnyActorRef, event: AnyEventObject): string {
    const id = `${HELD_PREFIX}${(++this.counter).toString(36)}.${Date.now().toString(36)}`;
    this.pending.set(id, { id, at: Date.now(), event: event as PendingTimer['event'], to: child.id });
    (this.targets ??= new Map()).set(id, child);
    this.owner.timersChanged(this.list(root.getSnapshot().children));
    return id;
  }

  /**
   * A held event was delivered: the agent's next checkpoint no longer keeps it. Not a checkpoint of
   * its own: until the next one (which holds what the child did with it), a restore, which starts
   * the child again, delivers it again.
   */
  release(id: string): void {
    this.pendingById?.delete(id);
    this.targets?.delete(id);
  }

  /** The actor is about to stop: what it cancels now stays pending in the store. */
  stop(): void {
    this.stopping = true;
  }

  /**
   * The pending set, for a checkpoint (what fired before is then saved), given the agent's children
   * in that checkpoint. A delayed event to a child that is no longer there, or was replaced under
   * the same id, is dropped: XState delivers it to no one (the actor it was scheduled for is stopped),
   * and a restore must not hand it to the new child.
   */
  list(children: Record<string, unknown> | undefined = this.root?.getSnapshot().children): PendingTimer[] {
    this.firedUnsaved = false;
    if (this.targets) {
      for (const [id, target] of this.targets) {
        const timer = this.pendingById?.get(id);
        if (timer && timer.to !== undefined && children?.[timer.to] === target) continue;
        this.targets.delete(id);
        this.pendingById?.delete(id);
      }
    }
    return this.pendingById ? [...this.pendingById.values()].map((t) => ({ ...t })) : [];
  }

  /** A checkpoint is written without delays: what fired before is saved. */
  saved(): void {
    this.firedUnsaved = false;
  }

  get size(): number {
    return this.pendingById?.size ?? 0;
  }
}

/** The ids of held events (see `hold`), beside the delays' ids in a checkpoint's set. */
const HELD_PREFIX = 'runtime.held.';

/**
 * A stored event with its actor references live again. An event scheduled with a ref in it
 * (`sendTo('child', { type: 'PING', origin: self }, { delay })`) is stored as JSON, where XState
 * writes a ref as `{ xstate$$type: 1, id }`; XState revives the refs in a restored context the
 * same way, from the agent itself and its children. A ref to an actor that is gone stays JSON.
 */
function reviveRefs(value: unknown, root: AnyActorRef): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((item) => reviveRefs(item, root));
  const record = value as Record<string, unknown>;
  if (record.xstate$$type === 1 && typeof record.id === 'string') {
    if (record.id === root.id) return root;
    return (root.getSnapshot() as { children?: Record<string, AnyActorRef | undefined> }).children?.[record.id] ?? value;
  }
  return Object.fromEntries(Object.entries(record).map(([key, item]) => [key, reviveRefs(item, root)]));
}

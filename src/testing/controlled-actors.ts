import { fromPromise, type AnyActorLogic } from 'xstate';

/** One start of a controlled actor, as the runner saw it. */
export interface ActorStart {
  /** 1 for the first process, 2 for the one restored after the simulated crash. */
  incarnation: number;
  /** Path steps already committed when it started (0: right after spawn). */
  afterStep: number;
  /** The invoke id (the child's id in the snapshot). */
  id: string;
  src: string;
  /** The input it was started with, as JSON. */
  input: unknown;
}

interface Pending {
  incarnation: number;
  src: string;
  resolve: (output: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Stand-ins for a machine's invoked actors that never settle on their own: the path settles them.
 *
 * Settling the child itself (rather than sending `xstate.done.actor.<id>` to the agent) is the more
 * faithful way to drive a path: XState builds the done/error event exactly as in production, the
 * runtime's gate still decides when the child starts (only after its checkpoint is committed), the
 * action log records the call, and a restore after a crash re-starts the child from the stored
 * snapshot, which is how a repeated LLM call would show up. Sending the event from outside would
 * skip all of that (and `runtime.send` rightly refuses `xstate.*` events).
 */
export class ControlledActors {
  readonly starts: ActorStart[] = [];
  /** The live incarnation; a crashed one starts nothing more and can never be settled. */
  private current = 1;
  private step = 0;
  private readonly pending = new Map<string, Pending>();
  private readonly waiters = new Set<() => void>();

  constructor(private readonly srcs: readonly string[]) {}

  /** Actor implementations for one process (incarnation), to `provide()` to the machine. */
  actorsFor(incarnation: number): Record<string, AnyActorLogic> {
    return Object.fromEntries(this.srcs.map((src) => [src, this.logic(incarnation, src)]));
  }

  /** The process died: its pending children are gone with it. */
  crash(): void {
    this.current++;
    this.pending.clear();
  }

  get incarnation(): number {
    return this.current;
  }

  /** Marks how many steps are committed, for the start log. */
  atStep(step: number): void {
    this.step = step;
  }

  /** Ids of the children started and not yet settled or stopped, in the live process. */
  running(): string[] {
    return [...this.pending.keys()];
  }

  /** Settles the running child `id` with an output (done) or an error, once it has started. */
  async settle(id: string, outcome: { done: true; output: unknown } | { done: false; error: unknown }, timeoutMs: number): Promise<void> {
    const child = await this.whenRunning(id, timeoutMs);
    this.pending.delete(id);
    if (outcome.done) child.resolve(outcome.output);
    else child.reject(outcome.error);
  }

  private whenRunning(id: string, timeoutMs: number): Promise<Pending> {
    const found = this.pending.get(id);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const check = () => {
        const child = this.pending.get(id);
        if (!child) return;
        cleanup();
        resolve(child);
      };
      const timer = setTimeout(() => {
        cleanup();
        const running = this.running();
        reject(
          new Error(
            `no running actor "${id}" to settle after ${timeoutMs} ms (running: ${running.length ? running.join(', ') : 'none'}); ` +
              'either the machine did not invoke it, or its checkpoint was never committed',
          ),
        );
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
    });
  }

  private logic(incarnation: number, src: string): AnyActorLogic {
    return fromPromise<unknown, unknown>(
      ({ input, self, signal }) =>
        new Promise<unknown>((resolve, reject) => {
          // A dead process starts nothing: this promise never settles and is never counted.
          if (incarnation !== this.current) return;
          const entry: Pending = { incarnation, src, resolve, reject };
          this.starts.push({ incarnation, afterStep: this.step, id: self.id, src, input: toJson(input) });
          this.pending.set(self.id, entry);
          signal.addEventListener(
            'abort',
            () => {
              if (this.pending.get(self.id) === entry) this.pending.delete(self.id);
            },
            { once: true },
          );
          for (const wake of [...this.waiters]) wake();
        }),
    );
  }
}

function toJson(value: unknown): unknown {
  return value === undefined ? null : (JSON.parse(JSON.stringify(value)) as unknown);
}

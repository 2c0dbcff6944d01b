/**
 * What the suite compares after each step, and how it is read the same way from plain XState, from
 * a runtime view and from a checkpoint: actor references become `{ $ref: id }` whether they are
 * live refs or their JSON form, and everything goes through JSON (a stored context is JSON).
 */

export interface TraceEntry {
  entry: string;
  /** ms since the run began (the agent's spawn, the actor's start), by the chart's clock */
  at: number;
}

export interface Observation {
  value: unknown;
  context: unknown;
  status: string;
  output: unknown;
  trace: TraceEntry[];
}

/**
 * The time a send step takes in the plan of a run: every way starts step k at the same planned
 * time since the run began, so a delay scheduled in one step and fired in another is compared at
 * the same point of the chart's time whatever each way spent on quiet periods, commits or restarts.
 */
export const SEND_SLOT_MS = 100;

/** When each step starts, in ms since the run began: a send takes SEND_SLOT_MS, a wait its `wait`; the last entry is the end. */
export function planOf(steps: readonly ({ send: unknown } | { wait: number })[]): number[] {
  const plan = [SEND_SLOT_MS];
  for (const step of steps) plan.push(plan[plan.length - 1]! + ('wait' in step ? step.wait : SEND_SLOT_MS));
  return plan;
}

/**
 * How late a run is against its plan. XState takes an event the moment it is sent; the runtime
 * takes it once the inbox write is committed and the agent gets it, which on a loaded machine can
 * be hundreds of ms later. The chart's delays count from when it took the event, so the rest of the
 * plan moves by that much (and so do the times of the trace): what is compared is the chart's
 * behaviour, not the store's latency.
 */
export class PlanSlip {
  /** ms the run is behind its plan. */
  ms = 0;
  private expected: { type: string; at: number } | undefined;

  /**
   * The harness sends `type` now (`at`, on the run's clock): XState would take it at once. What the
   * runtime takes longer is its own latency (the inbox commit, the hand-over), not the plan's.
   */
  expect(type: string, at: number): void {
    this.expected = { type, at };
  }

  /** It was not sent after all (refused at the door). */
  cancel(): void {
    this.expected = undefined;
  }

  /** The agent took an event of `type` at `at`. */
  delivered(type: string, at: number): void {
    if (this.expected?.type !== type) return;
    this.ms += Math.max(0, at - this.expected.at);
    this.expected = undefined;
  }
}

/** How long a run must show no transition and no trace before a step counts as finished. */
export const QUIET_MS = 40;
/** A step that never goes quiet (a chart that loops on timers) is observed after this long. */
export const MAX_STEP_MS = 3_000;

/** A JSON copy with actor references (live, or their `{ xstate$$type: 1, id }` JSON) as `{ $ref: id }`. */
export function normalize(value: unknown): unknown {
  if (value === undefined) return undefined;
  return JSON.parse(JSON.stringify(value, (_key, v: unknown) => (isActorRefJson(v) ? { $ref: v.id } : v)), (_key, v: unknown) =>
    isActorRefJson(v) ? { $ref: v.id } : v,
  ) as unknown;
}

function isActorRefJson(v: unknown): v is { id: string } {
  return typeof v === 'object' && v !== null && (v as { xstate$$type?: unknown }).xstate$$type === 1;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Resolves once nothing happened for QUIET_MS: no activity since `lastActivity()` nor since `since`
 * (when the step's event was acknowledged or its wait ended), and nothing `busy()`; or MAX_STEP_MS
 * after `since`.
 */
export async function quiet(lastActivity: () => number, busy: () => boolean = () => false, since = Date.now(), clock: () => number = Date.now): Promise<void> {
  for (;;) {
    const now = clock();
    const last = Math.max(lastActivity(), since);
    if (now - since >= MAX_STEP_MS) return;
    if (now - last >= QUIET_MS && !busy()) return;
    await sleep(Math.max(5, QUIET_MS - (now - last)));
  }
}

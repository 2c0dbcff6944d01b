// The timing of every case, checked without real time: each case is driven as run-xstate.ts drives
// it, but on XState's SimulatedClock, recording every timer the chart schedules (`after`, delayed
// `raise` and `sendTo`). A case whose delay comes due close to a step's send or to an observation is
// flaky on a loaded machine (the send or the observation lands a little late, a timer fires a little
// late, and the step sees the delay fired or not), so every deadline must keep a margin from them.
//
// The plan, in simulated time, exactly as the harness runs it: start at 0, then wait until quiet
// (QUIET_MS with no trace and no snapshot, timers firing meanwhile count as activity) and observe.
// Step k starts at max(plan[k], the end of the previous observation): a send happens then (so a send
// that follows a wait happens QUIET_MS after its planned time), a wait lets time run to plan[k + 1];
// then quiet, then observe. Each observation thus has a window [a, o]: `a` the moment of the step's
// action (the send; the end of the wait; the start), `o` the moment it is observed.
//
// The rule: the window [a, o] must stay MARGIN (100 ms) away from every deadline that can matter to
// it, i.e. every timer scheduled before `o` and not cleared before `a` (a timer cleared at the very
// moment it was scheduled never was pending) must come due
//   - at least MARGIN before `a`: it fires before the send (or before the end of the wait, the start
//     of the quiet), even if it fires up to 100 ms late; or
//   - at least MARGIN after `o`: it is still pending when the step is observed, even if the
//     observation lands up to 100 ms late (a send that follows a wait is already QUIET_MS late in
//     `a` and `o`). For a plain send that is 140 ms after the send, 100 ms after the end of a wait.
// A timer scheduled in the window (by the step's send, or by a timer firing in the quiet) moves with
// it, so only the second half applies to it. A timer the step's send clears (the send leaves its state
// or cancels it) need only come due MARGIN after the send: the clear then wins even if the send is late.
// And no timer may be shorter than MIN_DELAY_MS (50 ms): it would fire inside the quiet of its step.
import { createActor, SimulatedClock } from 'xstate';
import { describe, expect, it } from 'vitest';
import { allCases } from './cases/index.js';
import type { ConformanceCase } from './case.js';
import { MAX_STEP_MS, planOf, QUIET_MS } from './observation.js';

const MARGIN = 100;
const MIN_DELAY_MS = 50;

interface Timer {
  id: number;
  scheduledAt: number;
  delay: number;
  due: number;
  firedAt?: number;
  clearedAt?: number;
}

interface Window {
  /** 'start', or `step N (send X)` / `step N (wait W)` */
  what: string;
  /** the step's action: the start, the send, the end of the wait */
  a: number;
  /** whether the action is a send (which can clear timers itself) */
  send: boolean;
  /** when it is observed */
  o: number;
}

/** Lets promise actors (and anything else on microtasks) settle. */
const settle = async () => {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

/** Runs the case on a SimulatedClock as run-xstate.ts runs it: the timers it scheduled and the observation windows. */
async function simulate(c: ConformanceCase): Promise<{ timers: Timer[]; windows: Window[] }> {
  const clock = new SimulatedClock();
  const timers = new Map<number, Timer>();
  const setTimeout = clock.setTimeout.bind(clock);
  const clearTimeout = clock.clearTimeout.bind(clock);
  clock.setTimeout = (fn: (...args: unknown[]) => void, delay: number) => {
    const now = clock.now();
    const timer: Timer = { id: -1, scheduledAt: now, delay, due: now + delay };
    timer.id = setTimeout(() => {
      timer.firedAt = clock.now();
      fn();
    }, delay);
    timers.set(timer.id, timer);
    return timer.id;
  };
  clock.clearTimeout = (id: number) => {
    const timer = timers.get(id);
    if (timer && timer.firedAt === undefined && timer.clearedAt === undefined) timer.clearedAt = clock.now();
    clearTimeout(id);
  };
  const pending = () => [...timers.values()].filter((t) => t.firedAt === undefined && t.clearedAt === undefined);

  let lastActivity = 0;
  const machine = c.machine(() => (lastActivity = clock.now()));
  const actor = createActor(machine, c.input === undefined ? { clock } : { clock, input: c.input });
  actor.subscribe({
    next: () => (lastActivity = clock.now()),
    error: () => (lastActivity = clock.now()),
  });

  /** Moves the clock to `to`, firing each timer at its own due time. */
  const advance = async (to: number) => {
    for (;;) {
      const next = Math.min(...pending().map((t) => t.due));
      if (!(next <= to)) break;
      clock.set(Math.max(next, clock.now()));
      await settle();
    }
    if (to > clock.now()) clock.set(to);
    await settle();
  };
  /** As `quiet` in observation.ts: until QUIET_MS passed with no activity since `since`, or MAX_STEP_MS. */
  const quiet = async (since: number) => {
    for (;;) {
      const last = Math.max(lastActivity, since);
      const end = Math.min(last + QUIET_MS, since + MAX_STEP_MS);
      const next = Math.min(...pending().map((t) => t.due));
      if (next < end) {
        await advance(next);
        continue;
      }
      await advance(end);
      return;
    }
  };

  const windows: Window[] = [];
  actor.start();
  await settle();
  await quiet(0);
  windows.push({ what: 'start', a: 0, send: false, o: clock.now() });
  const plan = planOf(c.steps);
  for (const [k, step] of c.steps.entries()) {
    await advance(plan[k]!);
    if ('send' in step) actor.send(step.send);
    else await advance(plan[k + 1]!);
    const a = clock.now();
    await settle();
    await quiet(a);
    const what = 'send' in step ? `send ${step.send.type}` : `wait ${step.wait}`;
    windows.push({ what: `step ${k + 1} (${what})`, a, send: 'send' in step, o: clock.now() });
  }
  actor.stop();
  return { timers: [...timers.values()], windows };
}

/** What breaks the rule (see the top of this file), one line each. */
function violations(timers: Timer[], windows: Window[]): string[] {
  const found: string[] = [];
  const describeTimer = (t: Timer) =>
    `timer of ${t.delay} ms scheduled at ${t.scheduledAt}, due at ${t.due}` +
    (t.firedAt !== undefined ? '' : t.clearedAt !== undefined ? ` (cleared at ${t.clearedAt})` : ' (never fired)');
  for (const t of timers) {
    if (t.delay < MIN_DELAY_MS) found.push(`${describeTimer(t)}: shorter than ${MIN_DELAY_MS} ms`);
    if (t.clearedAt === t.scheduledAt) continue;
    for (const w of windows) {
      if (t.scheduledAt >= w.o) continue;
      if (t.clearedAt !== undefined && t.clearedAt < w.a) continue;
      // Cleared by the step's own action: that must beat the timer, even if late.
      if (w.send && t.clearedAt === w.a && t.scheduledAt < w.a) {
        if (t.due < w.a + MARGIN) found.push(`${describeTimer(t)}: cleared by ${w.what} at ${w.a}, less than ${MARGIN} ms before it comes due`);
        continue;
      }
      const before = t.scheduledAt < w.a && t.due <= w.a - MARGIN;
      const after = t.due >= w.o + MARGIN;
      if (!before && !after) found.push(`${describeTimer(t)}: too close to ${w.what}, sent or ended at ${w.a}, observed at ${w.o}`);
    }
  }
  return found;
}

describe('conformance cases keep their delays away from their steps', () => {
  it.each(allCases.map((c) => [c.id, c] as const))('%s', async (_id, c) => {
    const { timers, windows } = await simulate(c);
    expect(violations(timers, windows)).toEqual([]);
  });
});

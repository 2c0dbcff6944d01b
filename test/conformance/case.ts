/**
 * A conformance case: one statechart adapted from XState's own test suite, with the events and
 * waits that drive it. The oracle is XState itself: the suite runs each case in plain XState and
 * in the runtime (in-process; closed and reopened after every step and in the middle of every wait;
 * in a child process SIGKILLed after every step and in the middle of every wait), and compares,
 * step by step, the state value, context, status, output and the trace of what the chart ran.
 */
import type { AnyStateMachine, EventObject } from 'xstate';
import type { MachineDefinition } from '../../src/durable/definition.js';
import type { LintCode } from '../../src/durable/lint.js';

/** Records something the chart ran (an action, an actor's start, what an actor received): compared step by step. */
export type Trace = (entry: string) => void;

/**
 * The steps run on a plan, the same in every way: a send step takes 100 ms of the run's time
 * (SEND_SLOT_MS), a wait `wait` ms; each step starts at its planned time since the run began (the
 * first at 100 ms), so the time between two steps is the same in XState and in the runtime.
 */
export type Step =
  /** Sends one event, then waits until the machine is quiet (no transition, no trace for a short while). */
  | { send: EventObject; expect?: Expectation }
  /** Lets `wait` ms pass, then waits until the machine is quiet. */
  | { wait: number; expect?: Expectation };

/**
 * What plain XState must show after the step: a check of the case itself (that it exercises what
 * its note says), not of the runtime, which is compared with XState.
 */
export interface Expectation {
  value?: unknown;
  status?: 'active' | 'done' | 'error' | 'stopped';
  /** Entries the step's trace must contain, in this order (others may come between). */
  trace?: readonly string[];
}

export interface ConformanceCase {
  /** Unique, `[a-z0-9-]+`: also the machine's registry name. */
  id: string;
  /** Where it comes from in statelyai/xstate: the test file and the test's name (its describe path, then the `it`). */
  from: { file: string; test: string };
  /** A fresh machine for each run; its actions and actors report to `trace`. */
  machine: (trace: Trace) => AnyStateMachine;
  input?: Record<string, unknown>;
  /**
   * The definition's event schemas (`MachineDefinition.events`), for a type the runtime would
   * otherwise refuse at the door because no transition names it (XState takes any event).
   */
  events?: MachineDefinition['events'];
  /** What plain XState shows right after start, before the first step. */
  expectStart?: Expectation;
  steps: readonly Step[];
  /** The runtime refuses this machine at registration, with this linter code: the suite asserts it. */
  refused?: LintCode;
}

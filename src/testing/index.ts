/**
 * `durable-agents/testing`: path tests generated from a statechart (its events, invokes, `after`
 * delays and child agents' reports), run on the real runtime and a real SQLite store, with a crash
 * and a restore after every step.
 */
export {
  pathTests,
  type CrashTestCase,
  type PathTestCase,
  type PathTestOptions,
  type PathTestSuite,
} from './path-tests.js';
export { PathTestError, type PathRunResult, type PathStep } from './run-path.js';
export type { ActorStart } from './controlled-actors.js';
export type { DelayArm } from './controlled-delays.js';
export type { SpawnedAgent, SpawnRecord } from './agent-probe.js';
export type { ChildReports } from './child-reports.js';
export type { InvokeInfo, InvokeOutcomes } from './invokes.js';
export type { Coverage, CoverageList } from './replay.js';
export { defaultSerializeState, type StateView } from './format.js';
export { crashableStore, ProcessCrashedError } from './crashable-store.js';
export { agentPathTestOptions } from './agent-paths.js';

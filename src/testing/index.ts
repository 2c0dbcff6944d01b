/**
 * `durable-agents/testing`: path tests generated from a statechart, run on the real runtime and a
 * real SQLite store, with a crash and a restore after every step.
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
export type { InvokeInfo, InvokeOutcomes } from './invokes.js';
export type { Coverage, CoverageList } from './replay.js';
export { defaultSerializeState, type StateView } from './format.js';
export { crashableStore, ProcessCrashedError } from './crashable-store.js';
export { agentPathTestOptions } from './agent-paths.js';

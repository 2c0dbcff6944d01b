import type { RuntimeObserver } from '../runtime/observer.js';

type Callback = keyof RuntimeObserver;
// A record, so that the compiler refuses a callback added to RuntimeObserver and forgotten here.
const EVERY_CALLBACK: Record<Callback, true> = {
  machinesRegistered: true,
  transitionCommitted: true,
  batchCommitted: true,
  agentFailed: true,
  agentParked: true,
  ownershipChanged: true,
  pruned: true,
  storeAvailability: true,
  writesHeld: true,
  heldWritesRetried: true,
};
const CALLBACKS = Object.keys(EVERY_CALLBACK) as Callback[];

/**
 * One observer that calls each given one in turn (the runtime takes one). Every observer sees every
 * report even if another throws; the first error is then re-thrown for the runtime to log.
 */
export function combineObservers(...observers: readonly (RuntimeObserver | undefined)[]): RuntimeObserver {
  const present = observers.filter((o): o is RuntimeObserver => o !== undefined);
  const combined: RuntimeObserver = {};
  for (const name of CALLBACKS) {
    const targets = present.filter((o) => o[name]);
    if (targets.length === 0) continue;
    combined[name] = ((event: never) => {
      let failure: { error: unknown } | undefined;
      for (const target of targets) {
        try {
          (target[name] as (event: never) => void).call(target, event);
        } catch (error) {
          failure ??= { error };
        }
      }
      if (failure) throw failure.error;
    }) as never;
  }
  return combined;
}

import type { Logger } from '../core/logger.js';
import type { Leases, Store } from '../store/store.js';
import { LeaseKeeper } from './lease-keeper.js';
import type { LiveAgents } from './live-agents.js';
import type { Observe } from './observer.js';
import type { Watchers } from './watchers.js';

export interface OwnershipOptions {
  leases: Leases;
  store: Store;
  live: LiveAgents;
  watchers: Watchers;
  log: Logger;
  observe: Observe;
  /** Passivation is on: orphans that rest stay on disk until their next event. */
  skipResting: boolean;
}

/**
 * This process's share of the agents on a store many processes share: the lease that makes them its
 * own, the orphans it adopts, and what it does when another process commits a change of an agent.
 */
export function createOwnership({ leases, store, live, watchers, log, observe, skipResting }: OwnershipOptions): LeaseKeeper {
  /**
   * An event committed to an agent's inbox, maybe by another process: a live agent reads what it has
   * not seen. One not in memory is woken only by the process that holds it (passivated here); any
   * other holder is alive and acts itself, and an agent that had none, or a dead one, was claimed by
   * the process that took the event.
   */
  async function inboxEvent(agentId: string, seq: number, owner: string | null): Promise<void> {
    try {
      const host = live.get(agentId);
      if (!host) {
        if (owner === leases.processId) await live.wake(agentId);
        return;
      }
      if (!host.knows(seq)) host.offer(await store.eventsAfter(agentId, host.inboxPosition));
    } catch (err) {
      log.warn({ agentId, err }, 'could not read new inbox events; the next lease tick retries');
    }
  }

  /** Its status changed (stopped from any process, or an error where it ran): a copy running here must end, and watchers here see it. */
  async function statusChanged(agentId: string): Promise<void> {
    const host = live.get(agentId);
    if (!host && !watchers.isWatched(agentId)) return;
    try {
      const agent = await store.getAgent(agentId);
      if (host && agent?.status !== 'active') live.unload(host);
      if (!live.get(agentId)) live.notify(agentId);
    } catch (err) {
      log.warn({ agentId, err }, 'could not read the status of an agent changed elsewhere');
    }
  }

  return new LeaseKeeper(
    leases,
    {
      adopt: async (agents) => {
        const { restored } = await live.adopt(agents);
        observe('ownershipChanged', { change: 'adopted', agents: restored });
      },
      inboxEvent: (agentId, seq, owner) => void inboxEvent(agentId, seq, owner),
      statusChanged: (agentId) => void statusChanged(agentId),
      // An agent run here shows its own transitions; one run elsewhere is read from the store.
      checkpointCommitted: (agentId, seq) => {
        if (!live.get(agentId)) watchers.followRemote(agentId, seq);
      },
      leaseLost: () => {
        const agents = live.size;
        live.unloadAll();
        observe('ownershipChanged', { change: 'lease-lost', agents });
      },
      log,
    },
    { skipResting },
  );
}

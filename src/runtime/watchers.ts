import type { Logger } from '../core/logger.js';
import type { Store } from '../store/store.js';
import { checkpointView, type AgentView } from './views.js';

/** `seq`: the checkpoint the view shows (a status change outside a transition keeps the last one's). */
export type ViewListener = (view: AgentView, seq: number) => void;

/**
 * Who watches which agent, and what they are shown: a view after each committed transition of an
 * agent run here, and, on a shared store, of one that another process runs (read from the store, one
 * view per transition, in order).
 */
export class Watchers {
  private readonly listeners = new Map<string, Set<ViewListener>>();
  /** For watched agents that another process runs: the last seq shown and the reads in flight. */
  private readonly remote = new Map<string, { seen: number | undefined; reading: Promise<void> }>();

  constructor(
    private readonly store: Pick<Store, 'getAgent' | 'getCheckpoint'>,
    private readonly log: Logger,
  ) {}

  /** Calls `listener` with the agent's view after each committed transition; returns the unsubscribe. */
  watch(agentId: string, listener: ViewListener): () => void {
    let set = this.listeners.get(agentId);
    if (!set) this.listeners.set(agentId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size > 0) return;
      this.listeners.delete(agentId);
      this.remote.delete(agentId);
    };
  }

  isWatched(agentId: string): boolean {
    return (this.listeners.get(agentId)?.size ?? 0) > 0;
  }

  /** Shows a view to the agent's watchers; `view` is built only if someone watches. */
  publish(agentId: string, view: () => AgentView, seq: number): void {
    const set = this.listeners.get(agentId);
    if (!set?.size) return;
    const shown = view();
    set.forEach((listener) => listener(shown, seq));
  }

  /** Shows the view `read` builds (the agent's status changed outside a transition). */
  publishLater(agentId: string, read: () => Promise<{ view: AgentView; seq: number }>): void {
    const set = this.listeners.get(agentId);
    if (!set?.size) return;
    read().then(
      ({ view, seq }) => set.forEach((listener) => listener(view, seq)),
      (err: unknown) => this.log.warn({ agentId, err }, 'could not build a view for watchers'),
    );
  }

  /**
   * Another process committed checkpoints of an agent (shared store). Watchers here get one view per
   * transition, read from the store in order; the first notification after `watch` shows its newest.
   */
  followRemote(agentId: string, newest: number): void {
    const listeners = this.listeners.get(agentId);
    if (!listeners?.size) return;
    let follow = this.remote.get(agentId);
    if (!follow) this.remote.set(agentId, (follow = { seen: undefined, reading: Promise.resolve() }));
    const current = follow;
    current.reading = current.reading
      .then(async () => {
        const from = current.seen === undefined ? newest : current.seen + 1;
        if (from > newest) return;
        const agent = await this.store.getAgent(agentId);
        if (!agent) return;
        for (let seq = from; seq <= newest; seq++) {
          const checkpoint = await this.store.getCheckpoint(agentId, seq);
          if (!checkpoint) continue;
          const view = checkpointView(agent, checkpoint);
          listeners.forEach((listener) => listener(view, seq));
        }
        current.seen = newest;
      })
      .catch((err: unknown) => this.log.warn({ agentId, err }, 'could not read the checkpoints of an agent run elsewhere'));
  }
}

import type { PersistedSnapshotJson, SnapshotUpgrade } from '../../durable/definition.js';
import type { ChatMessage } from '../../llm/client.js';
import { DEFAULT_MAX_TURNS, NO_TOTALS } from './steps.js';

/**
 * Checkpoints of earlier versions, read as version 3.
 *
 * - Version 2 made one LLM call and one webhook per task, with the answer in `context.answer`. Its
 *   states all exist in version 3 with the same names and invoke ids (its webhook states are
 *   `sideEffect.requesting` / `backingOff`), so only the context grows: the exchange so far (the task,
 *   and the answer once there is one), no tools, the default turn limit, empty results and usage (what
 *   earlier tasks cost was not recorded). A version 2 LLM call in flight restarts with its stored input
 *   (`{model, system, task}`), which the LLM binding still reads.
 * - Version 1 invoked an `awaitCommit` actor (id `commit`) in `persisted` where version 2 has a commit
 *   barrier: its snapshot is version 2's without that child.
 */
export const AGENT_UPGRADES: Readonly<Record<string, SnapshotUpgrade>> = {
  '2': fromVersion2,
  '1': (snapshot) => {
    const { commit: _commit, ...children } = snapshot.children ?? {};
    return fromVersion2({ ...snapshot, children });
  },
};

function fromVersion2(snapshot: PersistedSnapshotJson): PersistedSnapshotJson {
  const context = (snapshot.context ?? {}) as Record<string, unknown>;
  const current = context.current as { task?: unknown } | null | undefined;
  const answer = typeof context.answer === 'string' ? context.answer : null;
  const messages: ChatMessage[] =
    current && typeof current.task === 'string'
      ? [{ role: 'user', content: current.task }, ...(answer !== null ? [{ role: 'assistant' as const, content: answer }] : [])]
      : [];
  return {
    ...snapshot,
    context: {
      ...context,
      tools: [],
      maxTurns: DEFAULT_MAX_TURNS,
      memory: 'task',
      messages,
      conversation: [],
      turn: answer !== null ? 1 : 0,
      pendingApprovals: [],
      decisions: {},
      taskUsage: NO_TOTALS,
      usage: NO_TOTALS,
      results: [],
    },
  };
}

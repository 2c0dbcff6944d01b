// A counter typed from its chart to its views: `satisfies MachineDefinition` keeps the machine's type,
// and `runtime.agentsOf(definition)` types by it the events sent and the views read.
import { assign, setup } from 'xstate';
import { createRuntime, type MachineDefinition } from '../../../src/index.js';
import { openSqliteStore } from '../../../src/store/sqlite/index.js';

export const counterMachine = setup({
  types: { context: {} as { count: number }, events: {} as { type: 'inc' } | { type: 'reset' } },
}).createMachine({
  id: 'counter',
  context: { count: 0 },
  on: {
    inc: { actions: assign({ count: ({ context }) => context.count + 1 }) },
    reset: { actions: assign({ count: 0 }) },
  },
});

// Not `const counterDefinition: MachineDefinition = …`: that annotation forgets the machine's type.
export const counterDefinition = { name: 'counter', machine: counterMachine } satisfies MachineDefinition;

/** Counts the agent `id` of the SQLite `file` up to `n`; returns its count. */
export async function countTo(file: string, id: string, n: number): Promise<number> {
  const runtime = await createRuntime({ store: await openSqliteStore(file), machines: [counterDefinition] });
  try {
    const counters = runtime.agentsOf(counterDefinition);
    await counters.spawn({ id }); // the same id again: the agent there already
    const { context } = await counters.view(id); // context: { count: number }
    for (let i = context.count; i < n; i++) await counters.send(id, { type: 'inc' }); // { type: 'add' } would not compile
    const counted = await counters.waitFor(id, (view) => view.context.count >= n, { timeoutMs: 10_000 });
    return counted.context.count;
  } finally {
    await runtime.close();
  }
}

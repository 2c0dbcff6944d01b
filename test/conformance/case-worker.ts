/**
 * The process the kill -9 runs of the conformance suite kill: one case's runtime on its SQLite
 * file. It loads, says `{"loaded":true}`, and waits for `go` before it opens the file (so that a
 * spare can be loaded while the previous process still runs, and takes over the moment that one
 * is killed). Then it restores the case's agent and answers commands, one JSON object per line:
 *
 *   in:  {"op":"go","offset":ms} | {"op":"spawn"} | {"op":"send","event":{...}} | {"op":"observe"} | {"op":"die"}
 *   out: {"loaded":true} | {"ready":true,"offset":ms} | {"refused":[codes]} | {"ack":true,"refusal"?} |
 *        {"observation":{...},"offset":ms} (once the agent is quiet; the clock stood still meanwhile) | {"trace":entry,"t":ms} | {"delivered":type,"t":ms}
 *
 * Trace lines are written the moment they happen: a pipe's writes are synchronous on
 * Linux, so what the process did before it was killed has reached the parent.
 *
 * The chart's clock: `go` carries `offset`, the ms during which no process of the case ran (from a
 * kill to the next process's `go`, mostly the time a loaded spare was waited for), and `Date.now()`
 * is set back by it, and then by the time the restore took (`ready` says the offset in force). Time stops while the case has no process, as if the restart took no time:
 * XState goes from one step to the next at once, and the delays the runtime stored (absolute
 * deadlines, by `Date.now()`) are compared with XState's without the harness's own overhead in them.
 *
 *   case-worker.ts <case id> <sqlite file>
 */
import readline from 'node:readline';
import { allCases } from './cases/index.js';
import { AGENT_ID, observeCaseAgent, openCaseRuntime, sendCaseEvent, spawnCaseAgent } from './case-runtime.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { quiet } from './observation.js';

const [caseId, file] = process.argv.slice(2);
const c = allCases.find((candidate) => candidate.id === caseId);
if (!c || !file) throw new Error(`case-worker: no case "${caseId}" (or no file)`);

const print = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);
let runtime: Runtime | undefined;
const realNow = Date.now.bind(Date);
let offset = 0;
let lastActivity = 0;
let busyNow = false;
print({ loaded: true });

for await (const line of readline.createInterface({ input: process.stdin })) {
  const command = JSON.parse(line) as { op: 'go' | 'spawn' | 'send' | 'die' | 'observe'; event?: { type: string }; offset?: number };
  switch (command.op) {
    case 'go': {
      const goAt = Date.now();
      offset = command.offset ?? 0;
      Date.now = () => realNow() - offset;
      const opened = await openCaseRuntime(
        c,
        file,
        (entry) => {
          lastActivity = realNow();
          print({ trace: entry, t: Date.now() });
        },
        (busy) => {
          lastActivity = realNow();
          busyNow = busy;
        },
        (type) => print({ delivered: type, t: Date.now() }),
      );
      if ('refused' in opened) {
        print({ refused: opened.refused });
        break;
      }
      runtime = opened.runtime;

      // The restore took no time either: the clock goes back by what it took (delays re-armed
      // meanwhile wait the difference: a durable delay never fires before its deadline by Date.now()).
      offset += realNow() - goAt;
      print({ ready: true, offset });
      break;
    }
    case 'spawn':
      await spawnCaseAgent(runtime!, c);
      print({ ack: true });
      break;
    case 'send': {
      const refusal = await sendCaseEvent(runtime!, command.event!);
      print({ ack: true, ...(refusal ? { refusal } : {}) });
      break;
    }
    case 'die':
      // SIGKILL, at a moment when no transition is half done: its actions would run again after the
      // restore (an uncommitted transition is re-run: at-least-once), which is not what the trace
      // comparison is about. The process sends the signal to itself in the same turn as it finds
      // itself quiet, so that no timer can fire in between.
      await quiet(() => lastActivity, () => busyNow, lastActivity, realNow);
      process.kill(process.pid, 'SIGKILL');
      break;
    case 'observe': {
      // The chart's clock stands still while the agent is observed (its step is over by the plan):
      // a delay due after this point waits (a durable delay never fires before its deadline by
      // Date.now()), however long the quiet period and the reading take on a loaded machine.
      const frozenAt = Date.now();
      const frozenReal = realNow();
      Date.now = () => frozenAt;
      // Here, not in the parent: a process the machine starves may say nothing for a while and still have work queued.
      await quiet(() => lastActivity, () => busyNow, realNow(), realNow);
      const observation = await observeCaseAgent(runtime!);
      offset += realNow() - frozenReal;
      Date.now = () => realNow() - offset;
      print({ observation, offset });
      break;
    }

  }
}

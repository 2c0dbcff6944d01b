/**
 * `serve --inspect[=PORT]`: every agent actor streams to Stately's inspector.
 *
 *   agents ──inspect──▶ createInspector (here: redact, serialize) ──postMessage──▶ worker thread:
 *     createWebSocketInspector ──ws──▶ createInspectorServer (relay + page) ◀──ws── the user's browser,
 *     whose page embeds Stately's web app (stately.ai/inspect): that browser needs internet.
 *
 * The relay runs in a worker thread because `createInspectorServer` listens with no error
 * handler (a port in use throws an uncaught exception) and on every interface. In the worker its
 * listen is bound to loopback (its page connects to `ws://localhost:PORT` anyway), its failure is
 * reported here as a sentence instead of killing the server, and its socket work and buffering
 * stay off the agents' event loop. Closing terminates the worker, with any reconnect timer in it.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createInspector, type StatelyInspectionEvent } from '@statelyai/inspect';
import type { InspectionEvent } from 'xstate';
import { AgentsError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { redactConfigJson, redactSecrets } from './redact.js';

export class InspectorError extends AgentsError {
  readonly code = 'inspector_unavailable';
}

export interface InspectorHandle {
  /** For `createRuntime({ inspect })`. */
  readonly inspect: (event: InspectionEvent) => void;
  /** The page to open in a browser on this machine. */
  readonly url: string;
  close(): Promise<void>;
}

// Plain JavaScript: a worker cannot load our TypeScript under tests, nor needs to.
const RELAY_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const listen = http.Server.prototype.listen;
// createInspectorServer calls listen(port, callback): add the host, and say when it listens.
http.Server.prototype.listen = function (port, callback) {
  return listen.call(this, port, workerData.host, async () => {
    const { createWebSocketInspector } = await import(workerData.inspectModule);
    const relay = createWebSocketInspector({ url: 'ws://' + workerData.host + ':' + port });
    parentPort.on('message', (event) => relay.adapter.send(event));
    parentPort.postMessage('listening');
    if (callback) callback();
  });
};
import(workerData.serverModule).then((m) => m.createInspectorServer({ port: workerData.port, autoOpen: false }));
`;

/**
 * Starts the relay on `port` (loopback) and resolves once it listens. Rejects with an
 * InspectorError saying what went wrong (port in use, no permission, timeout); never throws later:
 * a relay that dies afterwards is logged and inspection stops.
 */
export async function startInspector({ port, log, timeoutMs = 10_000 }: { port: number; log: Logger; timeoutMs?: number }): Promise<InspectorHandle> {
  const require = createRequire(import.meta.url);
  const host = '127.0.0.1';
  const worker = new Worker(RELAY_WORKER, {
    eval: true,
    workerData: {
      port,
      host,
      serverModule: pathToFileURL(require.resolve('@statelyai/inspect/server')).href,
      inspectModule: pathToFileURL(require.resolve('@statelyai/inspect')).href,
    },
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new InspectorError(`The Stately inspector did not start on port ${port} within ${timeoutMs} ms.`)), timeoutMs);
      worker.once('message', () => {
        clearTimeout(timer);
        resolve();
      });
      worker.once('error', (err) => {
        clearTimeout(timer);
        reject(new InspectorError(describeListenError(err, port)));
      });
      worker.once('exit', (code) => {
        clearTimeout(timer);
        reject(new InspectorError(`The Stately inspector stopped at start (exit code ${code}).`));
      });
    });
  } catch (err) {
    await worker.terminate();
    throw err;
  }

  let active = true;
  worker.on('error', (err) => {
    active = false;
    log.error({ err }, 'the Stately inspector relay failed; inspection stopped (the agents go on)');
  });
  worker.on('exit', () => (active = false));
  worker.unref(); // the server's own handles decide when the process may exit
  const inspector = createInspector(
    {
      send(event) {
        if (!active) return;
        try {
          worker.postMessage(event);
        } catch (err) {
          // This runs in the inspector's own timer: a throw here would kill the process.
          log.warn({ err }, 'an inspection event could not be sent; dropped');
        }
      },
    },
    { serialize: redactInspectionEvent },
  );
  return {
    inspect: (event) => {
      if (active) inspector.inspect.next?.(event);
    },
    url: `http://localhost:${port}/`,
    close: async () => {
      active = false;
      await worker.terminate();
    },
  };
}

/** Names are left as they are (a state named "token" is not a secret); see redact.ts. */
const INSPECTION_REDACTION = { verbatim: new Set(['value', 'historyValue']), nameMaps: new Set(['children']) };

/**
 * What leaves the process: a plain copy of the Stately event with secrets redacted everywhere
 * (context, events, a promise actor's input and output), including the machine `definition`,
 * which `sanitizeContext` would not reach. Never throws: it runs in the inspector's timer.
 */
export function redactInspectionEvent(event: StatelyInspectionEvent): StatelyInspectionEvent {
  try {
    const { definition, ...rest } = event as StatelyInspectionEvent & { definition?: unknown };
    const copy = redactSecrets(rest, INSPECTION_REDACTION) as Record<string, unknown>;
    if (typeof definition === 'string') copy.definition = redactConfigJson(definition) ?? JSON.stringify({ id: copy.name ?? 'unknown' });
    return copy as unknown as StatelyInspectionEvent;
  } catch {
    return { type: event.type, sessionId: event.sessionId } as StatelyInspectionEvent;
  }
}

function describeListenError(err: Error, port: number): string {
  const code = (err as { code?: unknown }).code;
  if (code === 'EADDRINUSE') return `Cannot start the Stately inspector: port ${port} is in use. Pick another with --inspect=PORT.`;
  if (code === 'EACCES') return `Cannot start the Stately inspector: no permission to listen on port ${port}. Pick a port above 1023 with --inspect=PORT.`;
  return `Cannot start the Stately inspector on port ${port}: ${err.message}`;
}

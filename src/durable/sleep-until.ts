/** Waits until an absolute time; a restored agent therefore sleeps only what is left. */
export function sleepUntil(at: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(done, Math.max(0, at - Date.now()));
    signal.addEventListener('abort', onAbort, { once: true });
    function done() {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }
    function onAbort() {
      clearTimeout(timer);
      reject(signal.reason as Error);
    }
  });
}

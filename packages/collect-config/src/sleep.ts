// An abortable pause: the daemon's sleeps end early on a hearth change, SIGHUP or stop.
import { setLongTimeout } from '@hearth/agent-kit/long-timer';

/** Resolves after `ms` (any length: a polling interval may be weeks), or as soon as `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      cancel();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const cancel = setLongTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** A listener is told the topic that changed. */
export type FeedListener = (topic: string) => void;

/**
 * Change notifications. Writers publish topics after their transaction commits; long-polls, SSE
 * streams and waiters subscribe. This one is in-process (SQLite, one replica); a PostgreSQL feed
 * with LISTEN/NOTIFY implements the same interface.
 */
export interface Feed {
  /** Tell every subscriber of each topic that it changed. */
  publish(topics: Iterable<string>): void;
  /** Listen to a topic; returns the function that stops listening. */
  subscribe(topic: string, listener: FeedListener): () => void;
  /** Number of listeners, for /metrics. */
  listenerCount(): number;
  /** Drop every listener. */
  close(): void;
}

/** Topic names, in one place. */
export const topics = {
  /** A server's metadata document may have changed. */
  serverMetadata: (serverId: string) => `server:${serverId}`,
  /** A deployment's status or timeline changed. */
  deployment: (deploymentId: string) => `deployment:${deploymentId}`,
  /** New events were written in a project. */
  projectEvents: (projectId: string) => `events:${projectId}`,
  /** A server's credential was revoked (other replicas drop their cached copy). */
  credential: (accessKeyId: string) => `credential:${accessKeyId}`,
  /** A wait condition changed (signal, heartbeat, result). */
  waitCondition: (id: string) => `wait-condition:${id}`,
  /** The earliest deployment deadline may have moved. */
  deadlines: 'deadlines',
} as const;

/** The in-process feed. */
export function createLocalFeed(): Feed {
  const listeners = new Map<string, Set<FeedListener>>();
  let count = 0;
  return {
    publish(changed) {
      for (const topic of new Set(changed)) {
        const set = listeners.get(topic);
        if (!set) continue;
        for (const listener of [...set]) listener(topic);
      }
    },
    subscribe(topic, listener) {
      let set = listeners.get(topic);
      if (!set) listeners.set(topic, (set = new Set()));
      set.add(listener);
      count++;
      return () => {
        if (set.delete(listener)) count--;
        if (set.size === 0) listeners.delete(topic);
      };
    },
    listenerCount: () => count,
    close() {
      listeners.clear();
      count = 0;
    },
  };
}

/**
 * Resolves when any of the topics is published or the timeout passes; `true` if it changed.
 * An AbortSignal (e.g. the client went away) ends the wait early with `false`.
 */
export function waitForChange(feed: Feed, watched: string[], timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const stops: Array<() => void> = [];
    const finish = (changed: boolean) => {
      clearTimeout(timer);
      for (const stop of stops) stop();
      signal?.removeEventListener('abort', onAbort);
      resolve(changed);
    };
    const onAbort = () => finish(false);
    const timer = setTimeout(() => finish(false), timeoutMs);
    for (const topic of watched) stops.push(feed.subscribe(topic, () => finish(true)));
    if (signal?.aborted) finish(false);
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A listener is told the topic that changed. */
export type FeedListener = (topic: string) => void;

/** The topic `wakeAll` passes to listeners: anything may have changed. */
export const ANY_TOPIC = '*';

/**
 * Change notifications. Writers publish topics after their transaction commits; long-polls, SSE
 * streams, caches and waiters subscribe. The feed itself is in-process; with PostgreSQL the store
 * also publishes here what other replicas committed (LISTEN/NOTIFY), and calls `wakeAll` when it
 * may have missed some (its listening connection dropped), so everyone re-checks.
 */
export interface Feed {
  /** Tell every subscriber of each topic that it changed. */
  publish(topics: Iterable<string>): void;
  /** Listen to a topic; returns the function that stops listening. */
  subscribe(topic: string, listener: FeedListener): () => void;
  /** Listen to every topic (caches keyed by many ids); returns the function that stops listening. */
  subscribeAll(listener: FeedListener): () => void;
  /** Wake every listener (with ANY_TOPIC): changes may have been missed, re-check everything. */
  wakeAll(): void;
  /** Number of listeners, for /metrics. */
  listenerCount(): number;
  /** Drop every listener. */
  close(): void;
}

/** Prefix of the topics that revoke a credential and that drop a deleted config. */
export const CREDENTIAL_TOPIC = 'credential:';
export const CONFIG_TOPIC = 'config:';

/** Topic names, in one place. */
export const topics = {
  /** A server's metadata document may have changed. */
  serverMetadata: (serverId: string) => `server:${serverId}`,
  /** A server was deleted (what is kept in memory for it is dropped). */
  serverDeleted: (serverId: string) => `server-deleted:${serverId}`,
  /** A deployment's status or timeline changed. */
  deployment: (deploymentId: string) => `deployment:${deploymentId}`,
  /** New events were written in a project. */
  projectEvents: (projectId: string) => `events:${projectId}`,
  /** A server's credential was revoked (other replicas drop their cached copy). */
  credential: (accessKeyId: string) => `${CREDENTIAL_TOPIC}${accessKeyId}`,
  /** A software config was deleted (other replicas drop their cached copy). */
  config: (configId: string) => `${CONFIG_TOPIC}${configId}`,
  /** A wait condition changed (signal, heartbeat, result). */
  waitCondition: (id: string) => `wait-condition:${id}`,
  /** The earliest deployment deadline may have moved. */
  deadlines: 'deadlines',
} as const;

/** The in-process feed. */
export function createLocalFeed(): Feed {
  const listeners = new Map<string, Set<FeedListener>>();
  const everything = new Set<FeedListener>();
  let count = 0;
  return {
    publish(changed) {
      for (const topic of new Set(changed)) {
        for (const listener of everything) listener(topic);
        const set = listeners.get(topic);
        if (!set) continue;
        for (const listener of [...set]) listener(topic);
      }
    },
    subscribeAll(listener) {
      everything.add(listener);
      return () => everything.delete(listener);
    },
    wakeAll() {
      for (const listener of [...everything]) listener(ANY_TOPIC);
      for (const set of [...listeners.values()]) for (const listener of [...set]) listener(ANY_TOPIC);
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
      everything.clear();
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

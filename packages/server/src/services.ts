import type { DeploymentRow } from './store/schema.ts';
import { openStore, type Store } from './store/store.ts';
import { createLocalFeed, type Feed } from './feed/feed.ts';
import { SecretDeriver } from './auth/secrets.ts';
import { Authenticator } from './auth/hooks.ts';
import { ConfigService } from './domain/configs.ts';
import { DeploymentService } from './domain/deployments.ts';
import { ServerService } from './domain/servers.ts';
import { SignalService } from './domain/signals.ts';
import { MetadataService } from './domain/metadata.ts';
import { DeadlineWatcher } from './domain/deadlines.ts';
import { ensureDefaultProject, ProjectDirectory } from './domain/projects.ts';
import { createMetrics, type Metrics } from './metrics.ts';

/** What the services need to start. */
export interface ServicesOptions {
  dataDir: string;
  databaseUrl?: string;
  adminToken: string;
  secretKey: string;
  /** Base URL agents use to reach this server (no trailing slash). */
  publicUrl: string;
  /** Where unexpected background errors go. */
  logError: (error: unknown) => void;
}

/** Every service of one hearth-server, wired together. */
export interface Services {
  store: Store;
  feed: Feed;
  secrets: SecretDeriver;
  auth: Authenticator;
  configs: ConfigService;
  deployments: DeploymentService;
  servers: ServerService;
  signals: SignalService;
  metadata: MetadataService;
  deadlines: DeadlineWatcher;
  metrics: Metrics;
  projects: ProjectDirectory;
  publicUrl: string;
  /** Stops timers, flushes pending writes and closes the store. */
  close(): Promise<void>;
}

/** Opens the store, migrates it, and starts the services. */
export async function createServices(options: ServicesOptions): Promise<Services> {
  const feed = createLocalFeed();
  const store = openStore({ dataDir: options.dataDir, databaseUrl: options.databaseUrl, onCommit: (topics) => feed.publish(topics) });
  await store.migrate();
  await ensureDefaultProject(store);
  const secrets = new SecretDeriver(options.secretKey);
  const publicUrl = options.publicUrl.replace(/\/+$/, '');
  const signalUrl = (row: DeploymentRow) =>
    row.signal_transport === 'HEARTH_SIGNAL'
      ? { url: `${publicUrl}/v1/guest/deployments/${row.id}/signal?token=${secrets.deploymentSignalToken(row.id)}`, verb: 'POST' as const }
      : null;
  const configs = new ConfigService(store);
  const servers = new ServerService(store, secrets, `${publicUrl}/v1/guest/metadata`);
  const deployments = new DeploymentService(store, configs, feed);
  const signals = new SignalService(store, configs);
  const metadata = new MetadataService(store, configs, feed, signalUrl, (serverId) => ({
    collectors: ['hearth'],
    hearth: { metadata_url: `${publicUrl}/v1/guest/metadata`, server_id: serverId },
  }));
  const deadlines = new DeadlineWatcher(store, feed, (id, stored) => servers.lastSeen(id, stored), options.logError);
  const metrics = createMetrics({
    hearth_write_queue_depth: { help: 'Writes waiting for a group commit', read: () => store.writeQueueDepth() },
    hearth_feed_listeners: { help: 'Long-polls, streams and caches listening for changes', read: () => feed.listenerCount() },
    hearth_metadata_cache_entries: { help: 'Metadata documents cached in memory', read: () => metadata.size },
  });
  deadlines.start();
  return {
    store,
    feed,
    secrets,
    auth: new Authenticator(options.adminToken, servers, secrets),
    configs,
    deployments,
    servers,
    signals,
    metadata,
    deadlines,
    metrics,
    projects: new ProjectDirectory(store),
    publicUrl,
    async close() {
      await deadlines.stop();
      await servers.flushSeen().catch(options.logError);
      feed.close();
      await store.close();
    },
  };
}

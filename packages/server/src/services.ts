import type { DeploymentRow } from './store/schema.ts';
import { openStore, type Store, type StoreOptions } from './store/store.ts';
import { createLocalFeed, topics, type Feed } from './feed/feed.ts';
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
import { StackService } from './domain/stacks.ts';
import { WaitConditionService } from './domain/wait-conditions.ts';
import { WaitConditionSweeper } from './domain/wait-condition-sweeper.ts';
import { WaitConditionGrace } from './domain/wait-condition-grace.ts';
import { deploymentSignalInputs, type TransportContext } from './domain/transports.ts';
import { GuestCredentials } from './auth/guest-credentials.ts';
import type { AlarmEvaluator } from './domain/alarm-evaluator.ts';
import { createAlarmServices, type AlarmSettings } from './domain/alarm-services.ts';
import type { MetricService } from './domain/metrics.ts';
import type { AlarmService } from './domain/alarms.ts';
import { ScalingAdjuster } from './domain/scaling-adjust.ts';
import { ScalingGroupService } from './domain/scaling-groups.ts';
import { ScalingPolicyService } from './domain/scaling-policies.ts';
import { ActuatorDeliverer } from './domain/scaling-deliverer.ts';
import { ScalingRecovery } from './domain/scaling-recovery.ts';
import { EventsRetention } from './domain/events-retention.ts';

/** The server id of a `server-deleted:<id>` topic. */
const SERVER_DELETED_TOPIC = topics.serverDeleted('');

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
  /** Told as each migration at start begins and ends (the server logs it). */
  onMigration?: StoreOptions['onMigration'];
  /** Metrics and alarms: evaluation schedule and lease, sample retention, action retries (defaults in their modules). */
  alarms?: AlarmSettings;
  /** See AppOptions.restartGraceMs. */
  restartGraceMs?: number | undefined;
  /** See AppOptions.eventsRetentionDays. */
  eventsRetentionDays?: number | undefined;
  /** See AppOptions.eventsMaxPerProject. */
  eventsMaxPerProject?: number | undefined;
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
  stacks: StackService;
  waitConditions: WaitConditionService;
  guestCredentials: GuestCredentials;
  metricSamples: MetricService;
  alarms: AlarmService;
  alarmEvaluator: AlarmEvaluator;
  scalingGroups: ScalingGroupService;
  scalingPolicies: ScalingPolicyService;
  actuatorDeliverer: ActuatorDeliverer;
  scalingRecovery: ScalingRecovery;
  eventsRetention: EventsRetention;
  metrics: Metrics;
  projects: ProjectDirectory;
  publicUrl: string;
  /** Stops timers, flushes pending writes and closes the store. */
  close(): Promise<void>;
}

/** Opens the store, migrates it, and starts the services. */
export async function createServices(options: ServicesOptions): Promise<Services> {
  const feed = createLocalFeed();
  const store = openStore({
    dataDir: options.dataDir,
    databaseUrl: options.databaseUrl,
    onCommit: (topics) => feed.publish(topics),
    // PostgreSQL: other replicas' commits wake this replica's waiters and drop its stale cache entries.
    onRemoteCommit: (topics) => feed.publish(topics),
    onResync: () => feed.wakeAll(),
    logError: options.logError,
    onMigration: options.onMigration,
  });
  await store.migrate();
  await ensureDefaultProject(store);
  const secrets = new SecretDeriver(options.secretKey);
  const publicUrl = options.publicUrl.replace(/\/+$/, '');
  const transport: TransportContext = { publicUrl, secrets };
  const signalInputs = (row: DeploymentRow) => ({ inputs: deploymentSignalInputs(transport, row) });
  const configs = new ConfigService(store);
  const stacks = new StackService(store, publicUrl);
  const servers = new ServerService(store, secrets, `${publicUrl}/v1/guest/metadata`, stacks, transport, options.logError);
  const deployments = new DeploymentService(store, configs, feed, stacks, secrets);
  const signals = new SignalService(store);
  const metadata = new MetadataService(store, configs, feed, signalInputs, (serverId) => servers.collectorSettings(serverId));
  // One restart grace for the API's checks and the sweeper's, as long as the deployments' (AppOptions.restartGraceMs).
  const waitConditionGrace = new WaitConditionGrace(options.restartGraceMs);
  const waitConditions = new WaitConditionService(store, feed, stacks, transport, waitConditionGrace);
  const waitConditionSweeper = new WaitConditionSweeper(store, options.logError, waitConditionGrace);
  const guestCredentials = new GuestCredentials(store, servers, secrets);
  const { metricSamples, alarms, alarmEvaluator } = createAlarmServices(store, options.alarms ?? {}, options.logError);
  const scalingAdjuster = new ScalingAdjuster(store, servers, options.logError);
  const scalingGroups = new ScalingGroupService(store, stacks, secrets, scalingAdjuster);
  const scalingPolicies = new ScalingPolicyService(store, stacks, scalingGroups, scalingAdjuster, transport);
  const actuatorDeliverer = new ActuatorDeliverer(store, feed, transport, options.logError);
  const scalingRecovery = new ScalingRecovery(
    store,
    (groupId, cause) => scalingAdjuster.recoverLeftovers(groupId, cause),
    options.logError,
  );
  feed.subscribeAll((topic) => {
    servers.onFeedTopic(topic);
    configs.onFeedTopic(topic);
    // Every replica's: the delete may have come through another one.
    if (topic.startsWith(SERVER_DELETED_TOPIC)) metricSamples.forgetServer(topic.slice(SERVER_DELETED_TOPIC.length));
  });
  const deadlines = new DeadlineWatcher(
    store,
    feed,
    (id, stored) => servers.lastSeen(id, stored),
    options.logError,
    undefined,
    options.restartGraceMs,
  );
  const metrics = createMetrics({
    hearth_write_queue_depth: { help: 'Writes waiting for a group commit', read: () => store.writeQueueDepth() },
    hearth_feed_listeners: { help: 'Long-polls, streams and caches listening for changes', read: () => feed.listenerCount() },
    hearth_metadata_cache_entries: { help: 'Metadata documents cached in memory', read: () => metadata.size },
    hearth_metadata_cache_characters: {
      help: 'Characters of the metadata documents cached in memory',
      read: () => metadata.cachedCharacters,
    },
    hearth_config_cache_characters: { help: 'Characters of the software configs cached in memory', read: () => configs.cachedCharacters },
  });
  const eventsRetention = new EventsRetention(
    store,
    {
      days: options.eventsRetentionDays,
      maxPerProject: options.eventsMaxPerProject,
      onPurged: (count) => metrics.eventsPurged.inc(count),
    },
    options.logError,
  );
  deadlines.start();
  waitConditionSweeper.start();
  alarmEvaluator.start();
  actuatorDeliverer.start();
  scalingRecovery.start();
  eventsRetention.start();
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
    stacks,
    waitConditions,
    guestCredentials,
    metricSamples,
    alarms,
    alarmEvaluator,
    scalingGroups,
    scalingPolicies,
    actuatorDeliverer,
    scalingRecovery,
    eventsRetention,
    metrics,
    projects: new ProjectDirectory(store),
    publicUrl,
    async close() {
      // The purge first: it is the one task whose next batch is never urgent.
      await eventsRetention.stop();
      await deadlines.stop();
      await waitConditionSweeper.stop();
      await alarmEvaluator.stop();
      await actuatorDeliverer.stop();
      await scalingRecovery.stop();
      await servers.flushSeen().catch(options.logError);
      feed.close();
      await store.close();
    },
  };
}

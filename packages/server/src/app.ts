import { performance } from 'node:perf_hooks';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { createServices, type Services, type ServicesOptions } from './services.ts';
import type { AlarmSettings } from './domain/alarm-services.ts';
import { clientErrorHandler, installErrorHandlers, sendCoded } from './app-errors.ts';
import { HearthError } from './domain/errors.ts';
import { TaskNotice } from './domain/task-health.ts';
import { createValidatorCompiler, formatSchemaErrors } from './validation.ts';
import { installLenientJsonParser } from './body-parser.ts';
import { errorForLog, redactUrl } from './log-redaction.ts';
import { cfnRoutes } from './routes/cfn/index.ts';
import { heatCompatRoutes } from './routes/compat/heat.ts';
import { keystoneRoutes } from './routes/compat/keystone.ts';
import { swiftRoutes } from './routes/compat/swift.ts';
import { nativeRoutes } from './routes/native/index.ts';
import { guestRoutes } from './routes/guest/index.ts';
import { opsRoutes } from './routes/ops/index.ts';
import { LongWaits } from './routes/abort.ts';
import { installRequestMetrics, markAnswered, recordRefused } from './request-metrics.ts';
import { answerUnchangedPollsFirst } from './routes/guest/unchanged-poll.ts';

/** How long closing waits for requests in flight to be answered before it cuts their connections. */
const DRAIN_MS = 10_000;

/** Options of one hearth-server app. */
export interface AppOptions {
  /** Data directory (SQLite file, generated secrets). */
  dataDir: string;
  /** Database URL; unset means SQLite in the data dir. */
  databaseUrl?: string;
  /** The operator's admin token. */
  adminToken: string;
  /** Master key the agent secrets and capability tokens derive from. */
  secretKey: string;
  /** Base URL agents reach this server at (default http://127.0.0.1:8000). */
  publicUrl?: string;
  /** pino options (level, stream); unset logs nothing. Query-string secrets are always redacted, and errors log only fields that name the failure (errorForLog). */
  logger?: { level: string; stream?: NodeJS.WritableStream };
  /** Metrics and alarms: evaluation schedule and lease, sample retention, action retries (defaults in their modules). */
  alarms?: AlarmSettings;
  /** How long after start deadlines that passed while the server was not running are held (default RESTART_GRACE_MS, 6 min). */
  restartGraceMs?: number;
  /** Days events are kept before the background purge deletes them (default EVENTS_RETENTION_DAYS, 30); 0 keeps them for ever. */
  eventsRetentionDays?: number;
  /** Events kept per project, the newest, by the same background purge (default EVENTS_MAX_PER_PROJECT, 1,000,000); 0 sets no bound. */
  eventsMaxPerProject?: number;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The services behind the routes (tests reach in to check the store). */
    services: Services;
  }
}

/** Builds hearth-server: every route family, ready for `listen` or `inject`. It never listens. */
/** How long a migration at start runs before the log says which one it is. */
const SLOW_MIGRATION_MS = 1000;

/**
 * Logs the migrations at start that take a while (an index on a large table): which one runs, then
 * how long it took. Quick ones, such as every migration of a fresh data dir, are not logged.
 */
function slowMigrationLog(log: FastifyBaseLogger): NonNullable<ServicesOptions['onMigration']> {
  let slow: NodeJS.Timeout | undefined;
  return (progress) => {
    clearTimeout(slow);
    if (progress.phase === 'start') {
      slow = setTimeout(() => log.info({ migration: progress.name }, `applying migration ${progress.name} ...`), SLOW_MIGRATION_MS);
      slow.unref();
    } else if (progress.ms >= SLOW_MIGRATION_MS) {
      log.info({ migration: progress.name, ms: progress.ms }, `applied migration ${progress.name} in ${progress.ms} ms`);
    }
  };
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger
      ? {
          ...options.logger,
          serializers: {
            req: (request: FastifyRequest) => ({ method: request.method, url: redactUrl(request.url), remoteAddress: request.ip }),
            err: errorForLog,
          },
        }
      : false,
    bodyLimit: 64 * 1024,
    // Requests that arrive while it stops get a coded 503 with Retry-After (the first hook below), not fastify's bare one.
    return503OnClosing: false,
    // What Node's HTTP parser refuses (431, 400, 408) gets a coded body too (CFN's shape under its paths), and its bytes are
    // never logged. No hook runs for such a request, nor does its response finish: it is counted here.
    clientErrorHandler: clientErrorHandler((response, method, status) => recordRefused(services.metrics, response, method, status)),
    forceCloseConnections: true,
    requestIdHeader: 'x-request-id',
    schemaErrorFormatter: formatSchemaErrors,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 512 },
    // Errors the router meets before any route runs get the same coded body as every other error (CFN's shape under its paths).
    frameworkErrors: (error, request, reply) => {
      // No hook runs for such a request: it is counted here, as a request no route matched.
      markAnswered(reply.raw, services.metrics, { method: request.method, routeOptions: {} }, performance.now());
      const reason =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? 'a path segment is longer than 512 characters'
          : error.code === 'FST_ERR_BAD_URL'
            ? 'the path has invalid percent-encoding'
            : 'the request cannot be routed';
      void sendCoded(request, reply, new HearthError('ERR_REQUEST_INVALID', { reason }));
    },
  });
  let closing = false;
  // A background task reports its failures as TaskNotices (one when it starts failing, reminders, one on recovery).
  const logError = (error: unknown): void => {
    if (error instanceof TaskNotice) app.log[error.level](error.fields, error.message);
    else app.log.error({ err: error }, 'background task failed');
  };
  const services = await createServices({
    dataDir: options.dataDir,
    databaseUrl: options.databaseUrl,
    adminToken: options.adminToken,
    secretKey: options.secretKey,
    publicUrl: options.publicUrl ?? 'http://127.0.0.1:8000',
    alarms: options.alarms,
    restartGraceMs: options.restartGraceMs,
    eventsRetentionDays: options.eventsRetentionDays,
    eventsMaxPerProject: options.eventsMaxPerProject,
    logError,
    onMigration: slowMigrationLog(app.log),
  });
  app.decorate('services', services);
  app.setValidatorCompiler(createValidatorCompiler());
  installLenientJsonParser(app);
  installErrorHandlers(app);
  installRequestMetrics(app, services.metrics);
  // Writes in flight when the app closes are answered before the connections are cut: a write
  // committed but cut off would look lost to its sender. Long waits (long-polls, event streams)
  // end at once and answer what they have: a connection cut mid-wait looks like a failure to its
  // agent. Other reads are short; they are not counted, so the hot 304 path pays nothing for this.
  // Requests that arrive meanwhile are refused (a coded 503 with Retry-After: 1).
  const longWaits = new LongWaits();
  app.decorate('longWaits', longWaits);
  let writesInFlight = 0;
  let writesAnswered: (() => void) | undefined;
  app.addHook('onRequest', (request, reply, done) => {
    if (closing) {
      void reply.header('connection', 'close');
      return done(new HearthError('ERR_SERVER_SHUTTING_DOWN'));
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      writesInFlight++;
      reply.raw.once('close', () => {
        if (--writesInFlight === 0) writesAnswered?.();
      });
    }
    done();
  });
  app.addHook('preClose', async () => {
    closing = true;
    const writes = writesInFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (writesAnswered = resolve));
    let timer: NodeJS.Timeout | undefined;
    const cap = new Promise<void>((resolve) => (timer = setTimeout(resolve, DRAIN_MS).unref()));
    await Promise.race([Promise.all([writes, longWaits.endAll()]), cap]);
    clearTimeout(timer);
  });
  app.addHook('onClose', async () => {
    await services.close();
  });

  await app.register(swagger, {
    openapi: {
      info: {
        title: 'hearth-server',
        version: '0.1.0',
        description: 'Software configs, deployments, metadata and signals for VMs; Heat-compatible.',
      },
      components: {
        securitySchemes: {
          operatorToken: { type: 'apiKey', in: 'header', name: 'X-Auth-Token' },
          agentCredential: { type: 'http', scheme: 'bearer' },
        },
      },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  await app.register(opsRoutes, { services, isClosing: () => closing });
  await app.register(guestRoutes, { services, prefix: '/v1/guest' });
  await app.register(nativeRoutes, { services, prefix: '/v1/:project_id' });
  // Heat-compatible surfaces for unmodified in-guest tools (reference/server.md §1, §2, §4).
  await app.register(heatCompatRoutes, { services, prefix: '/v1/:project_id' });
  await app.register(cfnRoutes, { services, prefix: '/v1' });
  await app.register(swiftRoutes, { services, prefix: '/v1/swift' });
  await app.register(keystoneRoutes, { services, prefix: '/v3' });
  // An agent's poll of an unchanged document is answered before fastify routes it, unless fastify
  // logs every request (at info and below; then it must log these too).
  if (!['trace', 'debug', 'info'].includes(options.logger?.level ?? 'silent'))
    answerUnchangedPollsFirst(app.server, services, () => closing);
  return app;
}

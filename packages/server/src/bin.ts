import { statSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { Command, CommanderError } from 'commander';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { limitConnections } from './connection-limit.ts';
import {
  EXIT,
  ExitError,
  adminTokenWarning,
  checkDataDir,
  describeStore,
  loadOrCreateSecret,
  resolveSettings,
  type ServeFlags,
  type ServerSettings,
} from './config.ts';
import { openStore, sqliteFile, type Store } from './store/store.ts';
import { isStoreUnavailable } from './store/unavailable.ts';

function settingsOrExit(flags: ServeFlags): ServerSettings {
  const { settings, errors, warnings = [] } = resolveSettings(flags, process.env);
  if (!settings) throw new ExitError(errors.join('; '), EXIT.usage);
  for (const warning of warnings) process.stderr.write(`hearth-server: warning: ${warning}\n`);
  return settings;
}

/** A SQLite file other users can read (made before hearth made new ones 0600): says so, with the chmod. */
function warnIfReadable(settings: ServerSettings): void {
  if (settings.databaseUrl?.startsWith('postgres')) return;
  const file = sqliteFile(settings.dataDir, settings.databaseUrl);
  let mode: number;
  try {
    mode = statSync(file).mode & 0o777;
  } catch {
    return;
  }
  if (mode & 0o077) {
    process.stderr.write(
      `hearth-server: warning: ${file} can be read by other users (mode 0${mode.toString(8)}) and holds deployment inputs and outputs: chmod 600 ${file} ${file}-wal ${file}-shm\n`,
    );
  }
}

/** Refuses a data dir other users could put files into, when this run reads from it: a secret not given by env, or SQLite there. */
function checkDataDirIfUsed(settings: ServerSettings, secretsFromEnv: boolean): void {
  if (!secretsFromEnv || !settings.databaseUrl) checkDataDir(settings.dataDir);
}

const FILE_ERRORS = new Set(['EACCES', 'EPERM', 'EEXIST', 'ENOTDIR', 'EISDIR', 'EROFS', 'ENOSPC', 'ELOOP', 'ENOENT']);

/** Whether `path` is `dir` or below it. */
function isInside(path: string, dir: string): boolean {
  const rel = relative(resolve(dir), resolve(path));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** A failure to open, migrate or write the store (or the data dir) at start, as an exit with what to do. */
function startupFailure(error: unknown, settings: ServerSettings): unknown {
  if (error instanceof ExitError || !(error instanceof Error)) return error;
  const { code: rawCode } = error as { code?: unknown };
  const code = typeof rawCode === 'string' ? rawCode : '';
  const store = describeStore(settings);
  if (settings.databaseUrl?.startsWith('postgres')) {
    // node-postgres reads the files the URL names (sslcert, sslkey, sslrootcert) when it connects.
    const { path } = error as { path?: unknown };
    if (FILE_ERRORS.has(code) && typeof path === 'string' && !isInside(path, settings.dataDir)) {
      return new ExitError(
        `cannot read ${path}, which --database-url (env HEARTH_DATABASE_URL) names (${error.message}): fix the path in its sslcert, sslkey or sslrootcert, or the file's permissions`,
        EXIT.usage,
      );
    }
    // What a DBA set that hearth cannot work with: the setting and the change are in the message.
    if (code === 'ERR_DATABASE_SETUP') return new ExitError(`${store}: ${error.message}`, EXIT.unavailable);
    if (code === '25006') {
      return new ExitError(
        `${store} takes no writes (${error.message}): it is a standby, or default_transaction_read_only is on for this user or database; ` +
          'point --database-url (env HEARTH_DATABASE_URL) at the primary, or turn it off (ALTER ROLE or ALTER DATABASE ... SET default_transaction_read_only = off)',
        EXIT.unavailable,
      );
    }
    if (code === '42501') {
      return new ExitError(
        `${store}: the database user lacks a privilege hearth-server needs (${error.message}): run hearth-server migrate as a user that may create ` +
          "tables in the schema (the database's owner, say), then serve as this one with SELECT, INSERT, UPDATE, DELETE on hearth's tables and USAGE on their sequences",
        EXIT.unavailable,
      );
    }
    if (isStoreUnavailable(error) || /^(08|28|3D)/.test(code)) {
      return new ExitError(
        `cannot use the database ${store}: ${error.message}; check --database-url (env HEARTH_DATABASE_URL) and that PostgreSQL runs and accepts this user`,
        EXIT.unavailable,
      );
    }
  }
  if (code === 'ERR_SCHEMA_NEWER') return new ExitError(`${store}: ${error.message}`, EXIT.dataError);
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
    return new ExitError(
      `${sqliteFile(settings.dataDir, settings.databaseUrl)} is not a usable SQLite database (${error.message}): restore it from a backup, or move it away to start afresh`,
      EXIT.dataError,
    );
  }
  if (code.startsWith('SQLITE_BUSY')) {
    return new ExitError(
      `${sqliteFile(settings.dataDir, settings.databaseUrl)} is locked by another process (${error.message}), likely another hearth-server migrating or writing it: run this again once that is done`,
      EXIT.databaseLocked,
    );
  }
  if (code === 'ENOSPC' || code === 'SQLITE_FULL') {
    const what = code === 'ENOSPC' ? `the data dir ${settings.dataDir}` : sqliteFile(settings.dataDir, settings.databaseUrl);
    return new ExitError(
      `cannot write ${what}: the disk holding it is full (${error.message}): free space on it, or pick another with --data-dir (env HEARTH_DATA_DIR)`,
      EXIT.cannotCreate,
    );
  }
  if (FILE_ERRORS.has(code) || /^SQLITE_(CANTOPEN|READONLY|PERM|IOERR)/.test(code)) {
    const where = code.startsWith('SQLITE_')
      ? `${sqliteFile(settings.dataDir, settings.databaseUrl)} (${error.message}): make it a file this user can write`
      : `the data dir ${settings.dataDir} (${error.message}): make it a directory this user can write`;
    return new ExitError(`cannot write ${where}, or pick another with --data-dir (env HEARTH_DATA_DIR)`, EXIT.cannotCreate);
  }
  return error;
}

/** A failure to listen, as an exit with what to do. */
function listenFailure(error: unknown, settings: ServerSettings): unknown {
  const code = (error as { code?: unknown }).code;
  const address = `${settings.host}:${settings.port}`;
  if (code === 'EADDRINUSE') {
    return new ExitError(`${address} is in use by another process: pick another with --listen (env HEARTH_LISTEN)`, EXIT.addressInUse);
  }
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EACCES') {
    const why = code === 'EACCES' ? 'this user may not bind that port' : 'that host is not an address of this machine';
    return new ExitError(`cannot listen on ${address}: ${why}; pick another with --listen (env HEARTH_LISTEN)`, EXIT.usage);
  }
  return error;
}

/** A stop signal this soon after the first is the same stop delivered twice, not a second one (see serve). */
const SAME_STOP_MS = 300;

async function serve(flags: ServeFlags): Promise<void> {
  const settings = settingsOrExit(flags);
  let app: FastifyInstance;
  let admin: { value: string; source: string };
  try {
    checkDataDirIfUsed(settings, Boolean(process.env.HEARTH_ADMIN_TOKEN && process.env.HEARTH_SECRET_KEY));
    admin = loadOrCreateSecret(settings.dataDir, 'admin-token', process.env.HEARTH_ADMIN_TOKEN);
    const weakAdmin = adminTokenWarning(admin);
    if (weakAdmin) process.stderr.write(`hearth-server: warning: ${weakAdmin}\n`);
    const key = loadOrCreateSecret(settings.dataDir, 'secret-key', process.env.HEARTH_SECRET_KEY);
    app = await buildApp({
      dataDir: settings.dataDir,
      databaseUrl: settings.databaseUrl,
      adminToken: admin.value,
      secretKey: key.value,
      publicUrl: settings.publicUrl,
      logger: { level: settings.logLevel, stream: process.stderr },
      eventsRetentionDays: settings.eventsRetentionDays,
      eventsMaxPerProject: settings.eventsMaxPerProject,
      ...(settings.alarmSchedule === undefined ? {} : { alarms: { evaluator: { schedule: settings.alarmSchedule } } }),
    });
  } catch (error) {
    throw startupFailure(error, settings);
  }
  warnIfReadable(settings);
  try {
    await app.listen({ host: settings.host, port: settings.port });
  } catch (error) {
    await app.close().catch(() => undefined);
    throw listenFailure(error, settings);
  }
  limitConnections(app);
  // Before the banner says it is listening: a supervisor (or a test) may send SIGTERM as soon as it reads that
  // line, and a signal that arrived before these handlers killed the process without a drain (exit by signal).
  let stoppingSince: number | undefined;
  const stop = (signal: 'SIGTERM' | 'SIGINT') => {
    if (stoppingSince !== undefined) {
      // The same stop, delivered twice: Ctrl-C, `kill %1` and systemd signal the whole process group,
      // and `npm start` forwards to us what it gets as well.
      if (performance.now() - stoppingSince < SAME_STOP_MS) return;
      // A second signal: the operator will not wait for the drain (up to 10 s). Writes not answered
      // yet may be committed or not; their senders retry, and a retried signal is idempotent.
      process.stderr.write(`hearth-server: ${signal} again: stopping now, without answering the requests still in flight\n`);
      process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
    }
    stoppingSince = performance.now();
    app.log.info({ signal }, 'shutting down');
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  const store = describeStore(settings);
  const bound = app.server.address();
  const port = typeof bound === 'object' && bound !== null ? bound.port : settings.port; // the one picked for --listen HOST:0
  process.stdout.write(
    [
      `hearth-server listening on http://${settings.host.includes(':') ? `[${settings.host}]` : settings.host}:${port}`,
      `  store:       ${store}`,
      `  admin token: ${admin.source === 'environment' ? 'from HEARTH_ADMIN_TOKEN' : `in ${admin.source}`} (send it as X-Auth-Token)`,
      `  native API:  ${settings.publicUrl}/v1/default/servers (and software_configs, software_deployments, ...)`,
      `  guest API:   ${settings.publicUrl}/v1/guest/metadata`,
      `  API docs:    ${settings.publicUrl}/docs`,
      `  try:         HEARTH_URL=${settings.publicUrl} HEARTH_TOKEN=${admin.source === 'environment' ? '$HEARTH_ADMIN_TOKEN' : `$(cat ${admin.source})`} npx hearth server list`,
      '',
    ].join('\n'),
  );
}

async function migrate(flags: ServeFlags): Promise<void> {
  const settings = settingsOrExit(flags);
  let store: Store | undefined;
  try {
    checkDataDirIfUsed(settings, true);
    store = openStore({
      dataDir: settings.dataDir,
      databaseUrl: settings.databaseUrl,
      // One line per migration as it starts and ends: a long one (an index on a large table) shows where it is.
      onMigration: (progress) =>
        process.stdout.write(
          progress.phase === 'start' ? `applying ${progress.name} ...\n` : `applied ${progress.name} (${progress.ms} ms)\n`,
        ),
    });
    const applied = await store.migrate();
    warnIfReadable(settings);
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'the database is up to date\n');
  } catch (error) {
    throw startupFailure(error, settings);
  } finally {
    await store?.close();
  }
}

function withStoreOptions(command: Command): Command {
  return command
    .option('--data-dir <dir>', 'data directory (env HEARTH_DATA_DIR, default ./.hearth)')
    .option('--database-url <url>', 'database URL (env HEARTH_DATABASE_URL; default SQLite in the data dir)');
}

// Without these listeners a write to a pipe whose reader left (`hearth-server serve | head -1`) throws from an event,
// with a stack trace: a server would die at its next log line, a migration in the middle. The lines are lost, nothing else.
process.stdout.on('error', () => undefined);
process.stderr.on('error', () => undefined);

const program = new Command('hearth-server')
  .description('hearth-server: software configs, deployments, metadata and signals for VMs')
  .exitOverride()
  .showHelpAfterError()
  .addHelpText(
    'after',
    `\nExit codes: 0 ok (and on SIGTERM/SIGINT after a clean stop), 1 unexpected error, ${EXIT.usage} bad flag or HEARTH_* value,
${EXIT.dataError} unusable data (empty secret, hearth.db not SQLite, a database migrated by a newer hearth-server), ${EXIT.unavailable} database unreachable,
${EXIT.cannotCreate} data dir not writable, ${EXIT.addressInUse} listen address in use or SQLite file locked by another process,
${EXIT.permission} secret file readable by others or data dir writable by them,
130/143 a second SIGINT/SIGTERM while stopping (stops at once, without the drain).`,
  );
withStoreOptions(
  program
    .command('serve')
    .description('serve the API (env HEARTH_ADMIN_TOKEN and HEARTH_SECRET_KEY, else generated into the data dir)')
    .option('--listen <host:port>', 'address to listen on (env HEARTH_LISTEN, default 127.0.0.1:8000)')
    .option('--public-url <url>', 'base URL agents reach this server at (env HEARTH_PUBLIC_URL)')
    .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (env HEARTH_LOG_LEVEL, default info)')
    .option(
      '--events-retention-days <days>',
      'days events are kept, older ones are deleted every 10 min; 0 keeps them for ever (env HEARTH_EVENTS_RETENTION_DAYS, default 30)',
    )
    .option(
      '--events-max-per-project <count>',
      "events kept per project, each project's oldest beyond it are deleted every 10 min; 0 sets no bound (env HEARTH_EVENTS_MAX_PER_PROJECT, default 1000000)",
    ),
).action(serve);
withStoreOptions(program.command('migrate').description('apply database migrations and exit')).action(migrate);

program.parseAsync(process.argv).catch((error: unknown) => {
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 64);
  if (error instanceof ExitError) {
    process.stderr.write(`hearth-server: ${error.message}\n`);
    process.exit(error.exitCode);
  }
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`hearth-server: ${message}\n`);
  process.exit(1);
});

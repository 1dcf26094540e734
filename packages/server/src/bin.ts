import { Command, CommanderError } from 'commander';
import { buildApp } from './app.ts';
import { loadOrCreateSecret, resolveSettings, type ServeFlags, type ServerSettings } from './config.ts';
import { openStore, redactDatabaseUrl } from './store/store.ts';

/** An error that ends the command with an exit code (only this file calls process.exit). */
class ExitError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

function settingsOrExit(flags: ServeFlags): ServerSettings {
  const { settings, errors } = resolveSettings(flags, process.env);
  if (!settings) throw new ExitError(`hearth-server: ${errors.join('; ')}`, 64);
  return settings;
}

async function serve(flags: ServeFlags): Promise<void> {
  const settings = settingsOrExit(flags);
  const admin = loadOrCreateSecret(settings.dataDir, 'admin-token', process.env.HEARTH_ADMIN_TOKEN);
  const key = loadOrCreateSecret(settings.dataDir, 'secret-key', process.env.HEARTH_SECRET_KEY);
  const app = await buildApp({
    dataDir: settings.dataDir,
    databaseUrl: settings.databaseUrl,
    adminToken: admin.value,
    secretKey: key.value,
    publicUrl: settings.publicUrl,
    logger: { level: settings.logLevel, stream: process.stderr },
    ...(settings.alarmSchedule === undefined ? {} : { alarms: { evaluator: { schedule: settings.alarmSchedule } } }),
  });
  await app.listen({ host: settings.host, port: settings.port });
  const store = settings.databaseUrl ? redactDatabaseUrl(settings.databaseUrl) : `SQLite in ${settings.dataDir}/hearth.db`;
  process.stdout.write(
    [
      `hearth-server listening on http://${settings.host.includes(':') ? `[${settings.host}]` : settings.host}:${settings.port}`,
      `  store:       ${store}`,
      `  admin token: ${admin.source === 'environment' ? 'from HEARTH_ADMIN_TOKEN' : `in ${admin.source}`} (send it as X-Auth-Token)`,
      `  native API:  ${settings.publicUrl}/v1/default/`,
      `  guest API:   ${settings.publicUrl}/v1/guest/metadata`,
      `  API docs:    ${settings.publicUrl}/docs`,
      `  try:         HEARTH_URL=${settings.publicUrl} HEARTH_TOKEN=$(cat ${admin.source === 'environment' ? '<your token file>' : admin.source}) npx hearth server list`,
      '',
    ].join('\n'),
  );
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function migrate(flags: ServeFlags): Promise<void> {
  const settings = settingsOrExit(flags);
  const store = openStore({ dataDir: settings.dataDir, databaseUrl: settings.databaseUrl });
  try {
    const applied = await store.migrate();
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'the database is up to date\n');
  } finally {
    await store.close();
  }
}

function withStoreOptions(command: Command): Command {
  return command
    .option('--data-dir <dir>', 'data directory (env HEARTH_DATA_DIR, default ./.hearth)')
    .option('--database-url <url>', 'database URL (env HEARTH_DATABASE_URL; default SQLite in the data dir)');
}

const program = new Command('hearth-server')
  .description('hearth-server: software configs, deployments, metadata and signals for VMs')
  .exitOverride()
  .showHelpAfterError();
withStoreOptions(
  program
    .command('serve')
    .description('serve the API (env HEARTH_ADMIN_TOKEN and HEARTH_SECRET_KEY, else generated into the data dir)')
    .option('--listen <host:port>', 'address to listen on (env HEARTH_LISTEN, default 127.0.0.1:8000)')
    .option('--public-url <url>', 'base URL agents reach this server at (env HEARTH_PUBLIC_URL)')
    .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (env HEARTH_LOG_LEVEL, default info)'),
).action(serve);
withStoreOptions(program.command('migrate').description('apply database migrations and exit')).action(migrate);

program.parseAsync(process.argv).catch((error: unknown) => {
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 64);
  if (error instanceof ExitError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(error.exitCode);
  }
  const message = error instanceof Error ? error.message : String(error);
  const hint = /EADDRINUSE/.test(message) ? ' (another process uses that port: pick another with --listen)' : '';
  process.stderr.write(`hearth-server: ${message}${hint}\n`);
  process.exit(1);
});

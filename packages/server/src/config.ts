import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import cron from 'node-cron';
import { newRandomToken } from './auth/secrets.ts';

/** Flags of `hearth-server serve` / `migrate` as commander hands them over. */
export interface ServeFlags {
  listen?: string;
  dataDir?: string;
  databaseUrl?: string;
  publicUrl?: string;
  logLevel?: string;
}

/** The resolved, validated settings of one hearth-server process. */
export interface ServerSettings {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl?: string;
  publicUrl: string;
  logLevel: string;
  /** node-cron schedule of alarm evaluation (HEARTH_ALARM_SCHEDULE); unset = the evaluator's default, every 10 s. */
  alarmSchedule?: string;
}

/** Defaults, in one place. */
export const DEFAULTS = { listen: '127.0.0.1:8000', dataDir: '.hearth', logLevel: 'info' } as const;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Parses `HOST:PORT` (IPv6 as `[::1]:8000`). */
export function parseListen(value: string): { host: string; port: number } | string {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  if (!match) return `--listen ${value} is not HOST:PORT (for example 127.0.0.1:8000)`;
  const port = Number(match[3]);
  if (port > 65535) return `--listen ${value}: port ${port} is above 65535`;
  return { host: (match[1] ?? match[2])!, port };
}

/** Flags win over env (HEARTH_*), env over defaults. Returns the settings or the errors found. */
export function resolveSettings(flags: ServeFlags, env: NodeJS.ProcessEnv): { settings?: ServerSettings; errors: string[] } {
  const errors: string[] = [];
  const listen = parseListen(flags.listen ?? env.HEARTH_LISTEN ?? DEFAULTS.listen);
  if (typeof listen === 'string') errors.push(listen);
  const logLevel = flags.logLevel ?? env.HEARTH_LOG_LEVEL ?? DEFAULTS.logLevel;
  if (!LOG_LEVELS.includes(logLevel)) errors.push(`log level ${logLevel} is not one of ${LOG_LEVELS.join(', ')}`);
  const publicUrl = flags.publicUrl ?? env.HEARTH_PUBLIC_URL;
  if (publicUrl && !/^https?:\/\/[^/\s]+(\/\S*)?$/.test(publicUrl)) errors.push(`public URL ${publicUrl} is not an http(s) URL`);
  const alarmSchedule = env.HEARTH_ALARM_SCHEDULE || undefined;
  if (alarmSchedule !== undefined && !cron.validate(alarmSchedule)) {
    errors.push(`HEARTH_ALARM_SCHEDULE ${alarmSchedule} is not a cron expression (for example '*/10 * * * * *': every 10 s)`);
  }
  if (errors.length > 0 || typeof listen === 'string') return { errors };
  const hostForUrl =
    listen.host === '0.0.0.0' || listen.host === '::' ? '127.0.0.1' : listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  const databaseUrl = flags.databaseUrl ?? env.HEARTH_DATABASE_URL;
  return {
    errors,
    settings: {
      host: listen.host,
      port: listen.port,
      dataDir: resolve(flags.dataDir ?? env.HEARTH_DATA_DIR ?? DEFAULTS.dataDir),
      databaseUrl: databaseUrl || undefined,
      publicUrl: (publicUrl ?? `http://${hostForUrl}:${listen.port}`).replace(/\/+$/, ''),
      logLevel,
      ...(alarmSchedule === undefined ? {} : { alarmSchedule }),
    },
  };
}

/**
 * A secret from the environment, else from `<dataDir>/<file>`, else generated into that file
 * (mode 0600). Returns the value and where it came from.
 */
export function loadOrCreateSecret(dataDir: string, file: string, fromEnv: string | undefined): { value: string; source: string } {
  if (fromEnv) return { value: fromEnv, source: 'environment' };
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, file);
  if (existsSync(path)) {
    const value = readFileSync(path, 'utf8').trim();
    if (value) return { value, source: path };
  }
  const value = newRandomToken();
  writeFileSync(path, `${value}\n`, { mode: 0o600, flag: 'w' });
  chmodSync(path, 0o600);
  return { value, source: path };
}

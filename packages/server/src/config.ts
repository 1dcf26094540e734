import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import cron from 'node-cron';
import { newRandomToken } from './auth/secrets.ts';
import {
  EVENTS_MAX_PER_PROJECT,
  EVENTS_MAX_PER_PROJECT_LIMIT,
  EVENTS_RETENTION_DAYS,
  EVENTS_RETENTION_MAX_DAYS,
} from './domain/events-retention.ts';
import { sqliteFile } from './store/store.ts';

/** Exit codes of hearth-server (sysexits.h), one per kind of trouble an operator can fix. */
export const EXIT = {
  /** a flag or HEARTH_* value is wrong */
  usage: 64,
  /** a file in the data dir holds something unusable: an empty or short secret, a hearth.db that is not SQLite */
  dataError: 65,
  /** the database cannot be reached or refuses this user */
  unavailable: 69,
  /** the data dir or a file in it cannot be created or written */
  cannotCreate: 73,
  /** the listen address is taken by another process */
  addressInUse: 75,
  /** another process held SQLite's write lock past the 5 s busy timeout (a `migrate` while `serve` starts): run again (EX_TEMPFAIL too) */
  databaseLocked: 75,
  /** a secret file can be read by other users, or the data dir written by them */
  permission: 77,
} as const;

/** An error that ends the command with an exit code (only bin.ts calls process.exit). */
export class ExitError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** Flags of `hearth-server serve` / `migrate` as commander hands them over. */
export interface ServeFlags {
  listen?: string;
  dataDir?: string;
  databaseUrl?: string;
  publicUrl?: string;
  logLevel?: string;
  eventsRetentionDays?: string;
  eventsMaxPerProject?: string;
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
  /** Days events are kept (--events-retention-days, HEARTH_EVENTS_RETENTION_DAYS; default 30); 0 keeps them for ever. */
  eventsRetentionDays: number;
  /** Events kept per project, the newest (--events-max-per-project, HEARTH_EVENTS_MAX_PER_PROJECT; default 1,000,000); 0 sets no bound. */
  eventsMaxPerProject: number;
}

/** Defaults, in one place. */
export const DEFAULTS = { listen: '127.0.0.1:8000', dataDir: '.hearth', logLevel: 'info' } as const;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Parses a retention in days: a whole number from 0 to EVENTS_RETENTION_MAX_DAYS, or the error naming the flag and variable. */
export function parseRetentionDays(value: string): number | string {
  if (/^\d{1,5}$/.test(value) && Number(value) <= EVENTS_RETENTION_MAX_DAYS) return Number(value);
  return `--events-retention-days (env HEARTH_EVENTS_RETENTION_DAYS) ${JSON.stringify(value)} is not a whole number of days from 0 to ${EVENTS_RETENTION_MAX_DAYS} (0 keeps events for ever; default ${EVENTS_RETENTION_DAYS})`;
}

/** Parses a count bound of events: a whole number from 0 to EVENTS_MAX_PER_PROJECT_LIMIT, or the error naming the flag and variable. */
export function parseMaxPerProject(value: string): number | string {
  if (/^\d{1,10}$/.test(value) && Number(value) <= EVENTS_MAX_PER_PROJECT_LIMIT) return Number(value);
  return `--events-max-per-project (env HEARTH_EVENTS_MAX_PER_PROJECT) ${JSON.stringify(value)} is not a whole number of events from 0 to ${EVENTS_MAX_PER_PROJECT_LIMIT} (0 sets no bound; default ${EVENTS_MAX_PER_PROJECT})`;
}

/** Parses `HOST:PORT` (IPv6 as `[::1]:8000`). */
export function parseListen(value: string): { host: string; port: number } | string {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  if (!match) return `--listen ${value} is not HOST:PORT (for example 127.0.0.1:8000)`;
  const port = Number(match[3]);
  if (port > 65535) return `--listen ${value}: port ${port} is above 65535`;
  return { host: (match[1] ?? match[2])!, port };
}

/**
 * The public URL as agents' clients write the Host they sign (reference/server.md §1.4): host lower-cased, the
 * scheme's default port dropped (`https://h:443` is `https://h`: curl and Python send `Host: h`, and the cfn
 * collector signs its metadata_url's `host:443`, which would never match), no trailing `/`. Or why it is not one.
 */
export function parsePublicUrl(value: string): string | { error: string } {
  // A user name and password in it are not repeated (the message goes to the log).
  const shown = value.replace(/^([a-z]+:\/\/)[^/@]*@/i, '$1***@');
  const bad = (why: string) => ({ error: `public URL ${shown} ${why} (for example https://hearth.example.com)` });
  if (!/^https?:\/\/[^/\s]+(\/\S*)?$/.test(value)) return bad('is not an http(s) URL');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return bad('is not a valid URL');
  }
  if (url.username || url.password) return bad('must not carry a user name or password');
  // Every URL handed out is this one plus a path (and its own query): a query or fragment here would break them all.
  if (url.search || url.hash || value.includes('?') || value.includes('#')) return bad('must not have a query or fragment');
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}

/** Flags win over env (HEARTH_*), env over defaults. Returns the settings or the errors found, and what to warn about. */
export function resolveSettings(
  flags: ServeFlags,
  env: NodeJS.ProcessEnv,
): { settings?: ServerSettings; errors: string[]; warnings?: string[] } {
  const errors: string[] = [];
  const listen = parseListen(flags.listen ?? env.HEARTH_LISTEN ?? DEFAULTS.listen);
  if (typeof listen === 'string') errors.push(listen);
  const logLevel = flags.logLevel ?? env.HEARTH_LOG_LEVEL ?? DEFAULTS.logLevel;
  if (!LOG_LEVELS.includes(logLevel)) errors.push(`log level ${logLevel} is not one of ${LOG_LEVELS.join(', ')}`);
  const givenPublicUrl = flags.publicUrl ?? env.HEARTH_PUBLIC_URL;
  const publicUrl = givenPublicUrl ? parsePublicUrl(givenPublicUrl) : undefined;
  if (typeof publicUrl === 'object') errors.push(publicUrl.error);
  const alarmSchedule = env.HEARTH_ALARM_SCHEDULE || undefined;
  if (alarmSchedule !== undefined && !cron.validate(alarmSchedule)) {
    errors.push(`HEARTH_ALARM_SCHEDULE ${alarmSchedule} is not a cron expression (for example '*/10 * * * * *': every 10 s)`);
  }
  if (typeof listen !== 'string' && listen.port === 0 && !publicUrl) {
    errors.push(
      `--listen ${listen.host}:0 picks a port at random, which agents cannot know: give --public-url (env HEARTH_PUBLIC_URL) too`,
    );
  }
  const eventsRetentionDays = parseRetentionDays(
    flags.eventsRetentionDays ?? (env.HEARTH_EVENTS_RETENTION_DAYS || String(EVENTS_RETENTION_DAYS)),
  );
  if (typeof eventsRetentionDays === 'string') errors.push(eventsRetentionDays);
  const eventsMaxPerProject = parseMaxPerProject(
    flags.eventsMaxPerProject ?? (env.HEARTH_EVENTS_MAX_PER_PROJECT || String(EVENTS_MAX_PER_PROJECT)),
  );
  if (typeof eventsMaxPerProject === 'string') errors.push(eventsMaxPerProject);
  const databaseUrl = (flags.databaseUrl ?? env.HEARTH_DATABASE_URL) || undefined;
  const databaseUrlError = databaseUrl === undefined ? undefined : checkDatabaseUrl(databaseUrl);
  if (databaseUrlError) errors.push(databaseUrlError);
  if (
    errors.length > 0 ||
    typeof listen === 'string' ||
    typeof publicUrl === 'object' ||
    typeof eventsRetentionDays === 'string' ||
    typeof eventsMaxPerProject === 'string'
  )
    return { errors };
  const wildcard = listen.host === '0.0.0.0' || listen.host === '::';
  const hostForUrl = wildcard ? '127.0.0.1' : listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  const warnings =
    wildcard && !publicUrl
      ? [
          `--listen ${flags.listen ?? env.HEARTH_LISTEN}: the URLs given to agents default to http://127.0.0.1:${listen.port}, which VMs cannot reach; set --public-url (env HEARTH_PUBLIC_URL)`,
        ]
      : [];
  return {
    errors,
    warnings,
    settings: {
      host: listen.host,
      port: listen.port,
      dataDir: resolve(flags.dataDir ?? env.HEARTH_DATA_DIR ?? DEFAULTS.dataDir),
      databaseUrl,
      publicUrl: publicUrl ?? `http://${hostForUrl}:${listen.port}`,
      logLevel,
      ...(alarmSchedule === undefined ? {} : { alarmSchedule }),
      eventsRetentionDays,
      eventsMaxPerProject,
    },
  };
}

/** The store as operators see it named: no password and no query string (either may hold a secret). */
export function describeStore(settings: Pick<ServerSettings, 'dataDir' | 'databaseUrl'>): string {
  const url = settings.databaseUrl;
  if (!url?.startsWith('postgres')) return `SQLite in ${sqliteFile(settings.dataDir, url)}`;
  const { protocol, username, host, pathname } = new URL(url);
  return `${protocol}//${username ? `${username}@` : ''}${host}${pathname}`;
}

/** What is wrong with a database URL, if anything; never repeats the URL (it may hold a password). */
function checkDatabaseUrl(url: string): string | undefined {
  const shapes = 'use postgres://USER:PASSWORD@HOST:PORT/DATABASE, sqlite:FILE, or leave it unset for SQLite in the data dir';
  if (url.startsWith('sqlite:')) return url.length > 'sqlite:'.length ? undefined : `database URL sqlite: names no file: ${shapes}`;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1];
  if (scheme !== 'postgres' && scheme !== 'postgresql') {
    return `database URL of scheme ${scheme ?? '(none)'} is not supported: ${shapes}`;
  }
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    // reported below
  }
  if (parsed?.hostname) return undefined;
  // A unix socket, as libpq and pg write it: postgres:///DATABASE?host=/run/postgresql.
  if (parsed?.searchParams.get('host')?.startsWith('/')) return undefined;
  return `database URL is not a valid ${scheme}:// URL with a host (or ?host=/SOCKET/DIR): ${shapes}`;
}

/** The secret files in the data dir: the variable that overrides each, its shortest value, what replacing it breaks. */
const SECRET_FILES = {
  'admin-token': { variable: 'HEARTH_ADMIN_TOKEN', minLength: 1, replacing: 'operators need the new token' },
  'secret-key': {
    variable: 'HEARTH_SECRET_KEY',
    minLength: 16,
    replacing: 'every agent credential and signal URL issued with the old key stops working',
  },
} as const;

/**
 * The length under which an admin token is accepted but warned about at start: short enough to be
 * guessed. Not refused: a demo or a test runs with HEARTH_ADMIN_TOKEN=t.
 */
export const ADMIN_TOKEN_ADVISED_LENGTH = 16;

/** The warning for an admin token shorter than ADMIN_TOKEN_ADVISED_LENGTH, naming where it came from, never the token; else undefined. */
export function adminTokenWarning(admin: { value: string; source: string }): string | undefined {
  if (admin.value.length >= ADMIN_TOKEN_ADVISED_LENGTH) return undefined;
  const where = admin.source === 'environment' ? 'HEARTH_ADMIN_TOKEN' : `the admin token in ${admin.source}`;
  return `${where} is ${admin.value.length} character(s) long, easy to guess, and it reaches every project: use at least ${ADMIN_TOKEN_ADVISED_LENGTH} (try: openssl rand -base64 32)`;
}

/**
 * Refuses (ExitError, exit 77) an existing data dir that another user could put files into: one that
 * group or others may write, or that belongs to a user other than this one or root. Such a user could
 * swap `secret-key` or `admin-token` for values they know (read at the next start, even by root) or
 * replace `hearth.db`. Only the directory is checked (as sshd's StrictModes does), not the files, and
 * nothing is changed: a dir made 0755 by systemd's StateDirectory= is fine. A missing dir is made 0700 later.
 */
export function checkDataDir(dataDir: string): void {
  let stats;
  try {
    stats = statSync(dataDir);
  } catch {
    return; // missing (made 0700 later), or unreadable: opening it reports that
  }
  if (!stats.isDirectory()) return; // reported when it is opened
  const mode = stats.mode & 0o777;
  const what = 'could replace the secrets and the database in it';
  if (mode & 0o022) {
    throw new ExitError(
      `the data dir ${dataDir} can be written by other users (mode 0${mode.toString(8)}), who ${what}: chmod go-w ${dataDir}`,
      EXIT.permission,
    );
  }
  const uid = process.getuid?.();
  if (uid !== undefined && stats.uid !== uid && stats.uid !== 0) {
    throw new ExitError(
      `the data dir ${dataDir} belongs to user ${stats.uid}, not to this user (${uid}); user ${stats.uid} ${what}: chown ${uid} ${dataDir}, or run hearth-server as user ${stats.uid}`,
      EXIT.permission,
    );
  }
}

/**
 * A secret from the environment, else from `<dataDir>/<file>`, else generated into that file
 * (mode 0600, written whole or not at all). A file that other users can read, or that is empty
 * or too short, is refused with an ExitError saying what to do: it is never silently replaced.
 */
export function loadOrCreateSecret(
  dataDir: string,
  file: keyof typeof SECRET_FILES,
  fromEnv: string | undefined,
): { value: string; source: string } {
  const { variable, minLength, replacing } = SECRET_FILES[file];
  if (fromEnv) {
    if (fromEnv.length < minLength) {
      throw new ExitError(
        `${variable} is ${fromEnv.length} characters long: it needs at least ${minLength} (try: openssl rand -base64 32)`,
        EXIT.usage,
      );
    }
    return { value: fromEnv, source: 'environment' };
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, file);
  if (existsSync(path)) {
    const mode = statSync(path).mode & 0o777;
    if (mode & 0o077) {
      throw new ExitError(`${path} can be read by other users (mode 0${mode.toString(8)}): chmod 600 ${path}`, EXIT.permission);
    }
    const value = readFileSync(path, 'utf8').trim();
    if (value.length < minLength) {
      throw new ExitError(
        `${path} is ${value ? `${value.length} characters long, under the ${minLength} needed` : 'empty'}: restore it, or delete it to generate a new one (${replacing})`,
        EXIT.dataError,
      );
    }
    return { value, source: path };
  }
  const value = newRandomToken();
  const partial = `${path}.${process.pid}.tmp`;
  writeFileSync(partial, `${value}\n`, { mode: 0o600, flag: 'wx' });
  renameSync(partial, path);
  return { value, source: path };
}

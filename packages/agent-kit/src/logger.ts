import { REDACTED, isSecretName, redactText } from './redact.ts';

/** Log levels, least to most severe. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Options of createLogger. */
export interface LoggerOptions {
  /** The program or component, written as `name` on every line. */
  name: string;
  /** `json`: one JSON object per line; `text`: `time LEVEL name: msg key=value` for people. Default json. */
  format?: 'json' | 'text';
  /** The least severe level written. Default info. */
  level?: LogLevel;
  /** Where lines go. Default process.stderr. */
  stream?: NodeJS.WritableStream;
}

/**
 * Writes structured log lines. Fields whose names look secret are written as `***`, and in the message and
 * every string field, secret URL query values and the text JSON.parse errors quote (see redactText).
 */
export interface Logger {
  readonly level: LogLevel;
  /** Whether a line at this level would be written. */
  isLevelEnabled(level: LogLevel): boolean;
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A logger that adds `fields` to every line (the child's own fields win over the parent's). */
  child(fields: Record<string, unknown>): Logger;
}

const SEVERITY: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
/** Keys every line has; a field with one of these names is written as `field.<name>` instead. */
const RESERVED = new Set(['time', 'level', 'name', 'msg']);
/** Nesting below this depth is written as a placeholder. */
const MAX_DEPTH = 8;

/** A JSON-safe copy of a field value: secrets redacted at any depth, errors as {name, message, code, stack}. */
function clean(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'bigint') return value.toString();
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return undefined;
  if (seen.has(value)) return '[Circular]';
  if (depth >= MAX_DEPTH) return '[Too deep]';
  if (value instanceof Date) return value.toISOString();
  if (Buffer.isBuffer(value)) return `[Buffer ${value.length} bytes]`;
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => clean(item, depth + 1, seen) ?? null);
    const source =
      value instanceof Error
        ? { name: value.name, message: value.message, ...(value as unknown as Record<string, unknown>), stack: value.stack }
        : (value as Record<string, unknown>);
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(source)) {
      const cleaned = isSecretName(key) && item !== undefined && item !== null ? REDACTED : clean(item, depth + 1, seen);
      if (cleaned !== undefined) out[key] = cleaned;
    }
    return out;
  } finally {
    seen.delete(value);
  }
}

/** One field as `key=value` for the text format: plain words bare, anything else JSON. */
function textPair(key: string, value: unknown): string {
  const shown = typeof value === 'string' && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return `${key}=${shown}`;
}

function build(options: Required<LoggerOptions>, bound: Record<string, unknown>): Logger {
  const threshold = SEVERITY[options.level];
  const write = (level: LogLevel, message: string, fields?: Record<string, unknown>): void => {
    if (SEVERITY[level] < threshold) return;
    const line: Record<string, unknown> = { time: new Date().toISOString(), level, name: options.name, msg: redactText(message) };
    const extra = clean({ ...bound, ...fields }, 0, new WeakSet()) as Record<string, unknown>;
    for (const [key, value] of Object.entries(extra)) line[RESERVED.has(key) ? `field.${key}` : key] = value;
    if (options.format === 'json') {
      options.stream.write(JSON.stringify(line) + '\n');
      return;
    }
    const pairs = Object.entries(line)
      .slice(4)
      .map(([key, value]) => ' ' + textPair(key, value));
    options.stream.write(`${line.time as string} ${level.toUpperCase()} ${options.name}: ${line.msg as string}${pairs.join('')}\n`);
  };
  return {
    level: options.level,
    isLevelEnabled: (level) => SEVERITY[level] >= threshold,
    debug: (message, fields) => write('debug', message, fields),
    info: (message, fields) => write('info', message, fields),
    warn: (message, fields) => write('warn', message, fields),
    error: (message, fields) => write('error', message, fields),
    child: (fields) => build(options, { ...bound, ...fields }),
  };
}

/** Whether a string names a log level (for --log-level flags). */
export function isLogLevel(value: string): value is LogLevel {
  return Object.hasOwn(SEVERITY, value);
}

/** Creates a logger writing one line per call to `stream` (default stderr), JSON by default. */
export function createLogger(options: LoggerOptions): Logger {
  return build(
    { name: options.name, format: options.format ?? 'json', level: options.level ?? 'info', stream: options.stream ?? process.stderr },
    {},
  );
}

// What a run-parts pass tells its reader, kept apart from how it is written: dib-run-parts' own
// text lines (with its profiling table), or one structured log record per event.
import { compareBytes } from './sort-order.ts';

/** How long one script ran. */
export interface ScriptTiming {
  /** File name in the directory. */
  script: string;
  /** Wall-clock seconds from start to exit. */
  seconds: number;
}

/** The events of one run-parts pass over a directory. */
export interface RunPartsReporter {
  /** When set, the sourcing shell prints dib-run-parts' "Sourcing environment file" lines itself, with this prefix, and `sourcing` is not called. */
  readonly sourcingLinePrefix?: string;
  /** An environment.d file is about to be sourced. */
  sourcing(file: string): void;
  /** A script is about to run. */
  running(path: string): void;
  /** A script exited 0. */
  completed(timing: ScriptTiming): void;
  /** A script exited non-zero (the directory stops here). */
  failed(timing: ScriptTiming & { exitCode: number }): void;
  /** Every script of the directory succeeded: per-script timings, in run order. */
  profile(dir: string, timings: ScriptTiming[]): void;
}

/** The fields of a structured logger that run-parts and os-refresh-config use (agent-kit's Logger fits). */
export interface EventLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad2 = (value: number): string => String(value).padStart(2, '0');

/** The local time zone's short name ("UTC", "EST"), as `date` prints it. */
function zoneName(now: Date): string {
  const part = new Intl.DateTimeFormat('en-US', { timeZoneName: 'short' }).formatToParts(now).find((p) => p.type === 'timeZoneName');
  return part?.value ?? 'UTC';
}

/** `date`'s default C-locale format: `Wed Nov 25 23:28:15 UTC 2026` (day space-padded). */
export function formatDateLikeCoreutils(now: Date): string {
  const day = String(now.getDate()).padStart(2, ' ');
  const time = `${pad2(now.getHours())}:${pad2(now.getMinutes())}:${pad2(now.getSeconds())}`;
  return `${DAYS[now.getDay()]} ${MONTHS[now.getMonth()]} ${day} ${time} ${zoneName(now)} ${now.getFullYear()}`;
}

/** The profiling table dib-run-parts prints after a directory succeeds (rows in C byte order of the names, as it sorts them). */
export function profilingTable(dir: string, timings: ScriptTiming[]): string[] {
  const name = dir.replace(/\/+$/, '').split('/').pop() ?? dir;
  const rows = [...timings]
    .sort((a, b) => compareBytes(a.script, b.script))
    .map((timing) => `${timing.script.padEnd(40)} ${timing.seconds.toFixed(3).padStart(10)}`);
  return [
    '----------------------- PROFILING -----------------------',
    '',
    `Target: ${name}`,
    '',
    `${'Script'.padEnd(40)} ${'Seconds'.padStart(9)}`,
    `${'-'.repeat(39).padEnd(40)} ${'-'.repeat(10)}`,
    '',
    ...rows,
    '',
    '--------------------- END PROFILING ---------------------',
  ];
}

/** dib-run-parts' own lines on `stream`: `dib-run-parts <date> Running <path>`, `<name> completed`, the profiling table. */
export function textRunPartsReporter(
  stream: NodeJS.WritableStream = process.stderr,
  clock: () => Date = () => new Date(),
): RunPartsReporter {
  const line = (text: string): void => {
    stream.write(`dib-run-parts ${formatDateLikeCoreutils(clock())} ${text}\n`);
  };
  return {
    sourcingLinePrefix: 'dib-run-parts',
    sourcing: () => undefined,
    running: (path) => line(`Running ${path}`),
    completed: (timing) => line(`${timing.script} completed`),
    failed: () => undefined, // dib-run-parts stops silently under `set -e`; the caller reports the failure
    profile: (dir, timings) => profilingTable(dir, timings).forEach(line),
  };
}

/** One structured record per event, for JSON logs: per-script seconds on each record and a summary per directory. */
export function loggerRunPartsReporter(logger: EventLogger): RunPartsReporter {
  return {
    sourcing: (file) => logger.info('Sourcing environment file', { file }),
    running: (path) => logger.info('Running script', { path }),
    completed: (timing) => logger.info('Script completed', { ...timing }),
    failed: (timing) => logger.error('Script failed', { ...timing }),
    profile: (dir, timings) => logger.info('Directory completed', { dir, scripts: timings }),
  };
}

// How a background task (deadline sweeper, wait-condition sweeper, actuator and alarm deliveries,
// last-seen writes) reports failures: one line when it starts failing, with the coded reason and
// what to do; a reminder every few minutes while it keeps failing, with a count; one line when it
// works again. A full disk or a database that is down fails every run: a line per run would flood
// the log for as long as it lasts.
import { performance } from 'node:perf_hooks';
import { isStoreFull, isStoreUnavailable } from '../store/unavailable.ts';

/** How long a task that keeps failing goes between reminders (default 5 minutes). */
export const TASK_REMINDER_MS = 5 * 60_000;

/** Why a task failed, coded as a request failing for the same reason is, and what the operator does about it. */
export function taskFailureCause(error: unknown): { code: string; hint: string } {
  if (isStoreFull(error))
    return { code: 'ERR_STORE_FULL', hint: 'free space on the disk holding the database; the task resumes by itself' };
  if (isStoreUnavailable(error))
    return { code: 'ERR_STORE_UNAVAILABLE', hint: 'check that the database runs and accepts connections; the task resumes by itself' };
  return { code: 'ERR_INTERNAL', hint: 'the error is in this line; it is retried, and a report of it helps' };
}

/** One log line about a background task; the app logs it at `level` with `fields` (a plain error logs as one that failed once). */
export class TaskNotice extends Error {
  constructor(
    message: string,
    /** pino level of the line. */
    readonly level: 'error' | 'info',
    /** Fields of the line: task, state, code, failures; `err` for an unexpected error (its stack). */
    readonly fields: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'TaskNotice';
  }
}

/** Tracks one background task's failures and recoveries, and logs them sparingly (see the file's comment). */
export class TaskHealth {
  private since: number | undefined;
  private code = '';
  private failures = 0;
  private lastLineAt = 0;

  constructor(
    /** The task's name in log lines (`deadline sweeper`). */
    private readonly task: string,
    private readonly log: (error: unknown) => void,
    private readonly remindMs = TASK_REMINDER_MS,
    /** Milliseconds on a clock for durations; default the monotonic one (a wall-clock step back silenced reminders for its size). */
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** True while the last run failed. */
  get failing(): boolean {
    return this.since !== undefined;
  }

  /** Consecutive failed runs (0 when the last one worked). */
  get consecutiveFailures(): number {
    return this.failures;
  }

  /** A run failed: logged when the task starts failing, when the reason changes, and every `remindMs` while it lasts. */
  failed(error: unknown): void {
    const now = this.clock();
    const { code, hint } = taskFailureCause(error);
    const reason = error instanceof Error ? error.message : String(error);
    this.failures++;
    const fields: Record<string, unknown> = { task: this.task, state: 'failing', code, reason, failures: this.failures };
    if (code === 'ERR_INTERNAL') fields.err = error;
    if (this.since === undefined || code !== this.code) {
      this.since ??= now;
      this.code = code;
      this.lastLineAt = now;
      this.log(new TaskNotice(`${this.task} is failing (${code}: ${reason}): ${hint}`, 'error', fields));
    } else if (now - this.lastLineAt >= this.remindMs) {
      this.lastLineAt = now;
      const minutes = Math.round((now - this.since) / 60_000);
      this.log(
        new TaskNotice(
          `${this.task} is still failing (${code}: ${reason}): ${this.failures} failed runs in ${minutes} min; ${hint}`,
          'error',
          fields,
        ),
      );
    }
  }

  /** A run worked: one line if the task was failing. */
  succeeded(): void {
    if (this.since === undefined) return;
    const seconds = Math.round((this.clock() - this.since) / 1000);
    this.log(
      new TaskNotice(`${this.task} works again, after ${this.failures} failed runs in ${seconds} s`, 'info', {
        task: this.task,
        state: 'recovered',
        code: this.code,
        failures: this.failures,
      }),
    );
    this.since = undefined;
    this.code = '';
    this.failures = 0;
  }
}

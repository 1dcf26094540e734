// The restart grace of wait conditions, as deployments have it (deadlines.ts). A condition created
// before hearth-server started, whose deadline passed while it was not running or passes during the
// grace, is held until the grace ends: cfn-signal, curl and heat-config-notify on its VMs may have
// failed during the outage and retry later. A signal since the start does not end the hold, as a
// deployment's does: with count > 1 the other VMs' signals may still be on their way.
import { performance } from 'node:perf_hooks';
import { RESTART_GRACE_MS } from './deadlines.ts';
import type { WaitConditionRow } from '../store/schema.ts';

/** What the grace reads of a condition. */
type Timed = Pick<WaitConditionRow, 'created_at' | 'deadline_at'>;

/** One process's restart grace for wait conditions: which deadlines it holds, and what their timeout says. */
export class WaitConditionGrace {
  /** When this process started (ISO). */
  readonly startedAt: string;
  /** When the grace ends (ISO). */
  readonly endsAt: string;
  /** When this process started on the monotonic clock (ms). */
  private readonly startedMonotonicMs = performance.now();

  /** `graceMs` after `startedMs` (default RESTART_GRACE_MS after now); 0 holds nothing. */
  constructor(
    readonly graceMs = RESTART_GRACE_MS,
    startedMs = Date.now(),
  ) {
    this.startedAt = new Date(startedMs).toISOString();
    this.endsAt = new Date(startedMs + Math.max(0, graceMs)).toISOString();
  }

  /**
   * Whether the grace still lasts at `now` (ISO). Also bounded on the monotonic clock: after the wall
   * clock stepped back (NTP at boot), `endsAt` was as far ahead as the step, and held deadlines for hours.
   */
  lasts(now: string): boolean {
    return now < this.endsAt && performance.now() - this.startedMonotonicMs < this.graceMs;
  }

  /** Whether the grace holds this condition's deadline: created before the start, due before the grace ends. */
  holds(row: Timed): boolean {
    return row.created_at < this.startedAt && row.deadline_at < this.endsAt;
  }

  /** Whether the condition has timed out at `now` (ISO): its deadline passed and the grace does not hold it. */
  timedOut(row: Timed, now: string): boolean {
    return row.deadline_at <= now && !(this.lasts(now) && this.holds(row));
  }

  /** What the timeout reason of a condition adds when the grace held it; '' when it did not. */
  note(row: Timed): string {
    if (this.graceMs <= 0 || !this.holds(row)) return '';
    // Said, so that nobody looks for a fault on the VM first.
    const waited = `it waited ${Math.round(this.graceMs / 1000)} s after starting for a late signal`;
    return row.deadline_at < this.startedAt
      ? ` (hearth-server was not running when the deadline passed; ${waited})`
      : ` (hearth-server restarted while it ran; ${waited})`;
  }
}

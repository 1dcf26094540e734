/** The failure policy and target of a wait condition. */
export interface WaitPolicy {
  count: number;
  /** FAILURE signals tolerated; null = Heat's rule unless a success percentage is set. */
  max_failures: number | null;
  /** Least share of SUCCESS among the signals received, in percent; null = not used. */
  min_success_percent: number | null;
}

/** A stored signal as the rules see it. */
export interface StoredSignal {
  status: string;
  reason: string | null;
}

/** FAILURE signals a condition tolerates: max_failures if set; else as many as the percentage allows; else none (Heat). */
export function allowedFailures(policy: WaitPolicy): number {
  if (policy.max_failures !== null) return policy.max_failures;
  if (policy.min_success_percent !== null) return policy.count - Math.ceil((policy.count * policy.min_success_percent) / 100);
  return 0;
}

/**
 * Decides a wait condition from its signals (reference/server.md §5.2, plus hearth's failure
 * policy): FAILED as soon as more FAILUREs arrived than allowed; COMPLETE once `count` signals
 * arrived and the SUCCESS share meets the percentage; otherwise still waiting (null).
 */
export function decide(policy: WaitPolicy, signals: StoredSignal[]): { status: 'COMPLETE' | 'FAILED'; reason: string } | null {
  const failures = signals.filter((s) => s.status !== 'SUCCESS');
  if (failures.length > allowedFailures(policy)) {
    return { status: 'FAILED', reason: `WaitConditionFailure: ${failures.map((s) => s.reason ?? '').join(';')}` };
  }
  if (signals.length < policy.count) return null;
  const successes = signals.length - failures.length;
  if (policy.min_success_percent !== null && successes * 100 < policy.min_success_percent * signals.length) {
    return {
      status: 'FAILED',
      reason: `WaitConditionFailure: ${successes} of ${signals.length} signals succeeded, below ${policy.min_success_percent}%`,
    };
  }
  return { status: 'COMPLETE', reason: `${signals.length} of ${policy.count} received` };
}

/** Heat's timeout reason: `WaitConditionTimeout: k of n received` plus the SUCCESS reasons. */
export function timeoutReason(policy: WaitPolicy, signals: StoredSignal[]): string {
  const reasons = signals.filter((s) => s.status === 'SUCCESS').map((s) => s.reason ?? '');
  const base = `WaitConditionTimeout: ${signals.length} of ${policy.count} received`;
  return reasons.length > 0 ? `${base} - ${reasons.join(';')}` : base;
}

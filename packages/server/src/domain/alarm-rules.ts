import type { AlarmState, ComparisonOperator, MetricStatistic } from '@hearth/protocol';

/** A sample as the rules see it: when (epoch ms) and how much. */
export interface TimedValue {
  timeMs: number;
  value: number;
}

/** One evaluation period: (startMs, endMs] and its statistic, or null when it has no datapoint. */
export interface Datapoint {
  startMs: number;
  endMs: number;
  value: number | null;
}

/** What an alarm is judged by. */
export interface AlarmRule {
  statistic: MetricStatistic;
  comparisonOperator: ComparisonOperator;
  threshold: number;
  periodSeconds: number;
  evaluationPeriods: number;
}

/** The outcome of one evaluation: the new state (null = not enough evidence to move), why, and the datapoints. */
export interface Decision {
  state: AlarmState | null;
  reason: string;
  datapoints: Datapoint[];
}

/**
 * A period's statistic. SampleCount and Sum of no samples are 0 (so a `Heartbeat` alarm on
 * `SampleCount < 1` fires when a server goes quiet, as with Heat's CloudWatch-lite); Average,
 * Minimum and Maximum of no samples are null: the period has no datapoint.
 */
export function statisticOf(values: readonly number[], statistic: MetricStatistic): number | null {
  if (statistic === 'SampleCount') return values.length;
  if (statistic === 'Sum') return values.reduce((a, b) => a + b, 0);
  if (values.length === 0) return null;
  if (statistic === 'Average') return values.reduce((a, b) => a + b, 0) / values.length;
  if (statistic === 'Minimum') return Math.min(...values);
  return Math.max(...values);
}

/** True when a datapoint is on the wrong side of the threshold. */
export function breaches(value: number, operator: ComparisonOperator, threshold: number): boolean {
  switch (operator) {
    case 'GreaterThanThreshold':
      return value > threshold;
    case 'GreaterThanOrEqualToThreshold':
      return value >= threshold;
    case 'LessThanThreshold':
      return value < threshold;
    case 'LessThanOrEqualToThreshold':
      return value <= threshold;
  }
}

const SYMBOLS: Record<ComparisonOperator, string> = {
  GreaterThanThreshold: '>',
  GreaterThanOrEqualToThreshold: '>=',
  LessThanThreshold: '<',
  LessThanOrEqualToThreshold: '<=',
};

/** The N most recent periods ending at `nowMs` (oldest first, each open at its start), with their statistic over the samples in them. */
export function datapointsOf(samples: readonly TimedValue[], rule: AlarmRule, nowMs: number): Datapoint[] {
  const periodMs = rule.periodSeconds * 1000;
  const points: Datapoint[] = [];
  for (let k = rule.evaluationPeriods; k >= 1; k--) {
    const startMs = nowMs - k * periodMs;
    const endMs = startMs + periodMs;
    const values = samples.filter((s) => s.timeMs > startMs && s.timeMs <= endMs).map((s) => s.value);
    points.push({ startMs, endMs, value: statisticOf(values, rule.statistic) });
  }
  return points;
}

/** The earliest sample time (epoch ms) an evaluation at `nowMs` looks at. */
export function windowStartMs(rule: AlarmRule, nowMs: number): number {
  return nowMs - rule.evaluationPeriods * rule.periodSeconds * 1000;
}

/**
 * Decides an alarm's state from its last `evaluationPeriods` periods:
 * - ALARM when every period has a datapoint and every one breaches (evaluation periods really count);
 * - INSUFFICIENT_DATA when no period has a datapoint;
 * - OK when some datapoint does not breach;
 * - otherwise (every datapoint breaches but some periods have none) no change: too little evidence either way.
 */
export function decide(samples: readonly TimedValue[], rule: AlarmRule, nowMs: number): Decision {
  const datapoints = datapointsOf(samples, rule, nowMs);
  const present = datapoints.filter((d): d is Datapoint & { value: number } => d.value !== null);
  const test = `${rule.statistic} ${SYMBOLS[rule.comparisonOperator]} ${rule.threshold}`;
  const span = `${rule.evaluationPeriods} period(s) of ${rule.periodSeconds} s`;
  if (present.length === 0) return { state: 'INSUFFICIENT_DATA', reason: `No datapoint in the last ${span}`, datapoints };
  const latest = present[present.length - 1]!.value;
  const breaching = present.filter((d) => breaches(d.value, rule.comparisonOperator, rule.threshold)).length;
  if (breaching < present.length) {
    return {
      state: 'OK',
      reason: `${present.length - breaching} of ${present.length} datapoint(s) in the last ${span} do not meet ${test}; most recent ${latest}`,
      datapoints,
    };
  }
  if (present.length === datapoints.length) {
    return { state: 'ALARM', reason: `All of the last ${span} meet ${test}; most recent ${latest}`, datapoints };
  }
  return {
    state: null,
    reason: `${present.length} of the last ${span} have datapoints and all meet ${test}; waiting for the rest`,
    datapoints,
  };
}

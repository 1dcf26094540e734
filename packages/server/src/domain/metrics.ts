import { performance } from 'node:perf_hooks';
import {
  DEFAULT_METRIC_NAMESPACE,
  heatTime,
  type MetricDimensions,
  type MetricListQuery,
  type MetricPut,
  type MetricSample,
  type MetricSampleInput,
} from '@hearth/protocol';
import type { Transaction } from 'kysely';
import type { Store } from '../store/store.ts';
import type { Database } from '../store/schema.ts';
import type { MetricSampleRow } from '../store/schema-metrics-alarms.ts';
import { HearthError } from './errors.ts';
import type { TimedValue } from './alarm-rules.ts';
import { MEMBER_JOINING } from './scaling-bootstrap.ts';
import { isMetricValueInRange, metricTextProblem, metricValueProblem, parseSampleTime } from './metric-values.ts';

// Where they were: the routes and tests import them from here.
export { isMetricValueInRange, MAX_METRIC_VALUE, metricTextProblem, metricValueProblem, parseSampleTime } from './metric-values.ts';

/** How long samples are kept: whichever limit is hit first. */
export interface MetricRetention {
  /** Samples older than this are pruned; default 2 days. */
  maxAgeSeconds: number;
  /** At most this many samples are kept (the oldest go first); default 200 000. */
  maxSamples: number;
}

/** Retention defaults, in one place. */
export const DEFAULT_METRIC_RETENTION: MetricRetention = Object.freeze({ maxAgeSeconds: 2 * 86400, maxSamples: 200_000 });

/** How far ahead of the server's clock a sample's timestamp may be. */
const MAX_FUTURE_MS = 2 * 3600 * 1000;

/** Dimensions as stored: JSON with sorted keys, so equal sets compare equal. */
export function canonicalDimensions(dimensions: MetricDimensions | undefined): string {
  const entries = Object.entries(dimensions ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(Object.fromEntries(entries));
}

/** True when a sample carries every dimension the alarm names, with the same value (it may carry more). */
export function dimensionsMatch(wanted: MetricDimensions, sample: MetricDimensions): boolean {
  return Object.entries(wanted).every(([name, value]) => sample[name] === value);
}

/**
 * The dimension an alarm names a scaling group by (`AutoScalingGroupName=web` sees every member's
 * samples), so only members may send it for a group of hearth's.
 */
const GROUP_DIMENSION = 'AutoScalingGroupName';

/**
 * Refuses (ERR_AUTH_FORBIDDEN) a sender that names a scaling group of its project it is not a member
 * of: one VM's credential must not drive another group's alarms. A name no group of the project holds
 * is let through (a group outside hearth, or not made yet).
 */
async function assertGroupMember(trx: Transaction<Database>, sender: MetricSender, names: string[]): Promise<void> {
  const groups = await trx
    .selectFrom('scaling_groups')
    .leftJoin('scaling_members', (join) =>
      join
        .onRef('scaling_members.group_id', '=', 'scaling_groups.id')
        .on('scaling_members.server_id', '=', sender.serverId)
        // A record reserved for a scale-up is no member until the capacity is written.
        .on('scaling_members.bootstrap', '!=', MEMBER_JOINING),
    )
    .select(['scaling_groups.name', 'scaling_members.server_id'])
    .where('scaling_groups.project_id', '=', sender.projectId)
    .where('scaling_groups.name', 'in', names)
    .execute();
  const stranger = names.find(
    (name) => groups.some((g) => g.name === name) && !groups.some((g) => g.name === name && g.server_id !== null),
  );
  if (stranger !== undefined)
    throw new HearthError('ERR_AUTH_FORBIDDEN', {
      reason: `server ${sender.serverId} is not a member of scaling group ${stranger}, so it may not send samples with ${GROUP_DIMENSION}=${stranger}`,
    });
}

/** The dimension an alarm names one VM by (cfn-push-stats sends it with every sample). */
const INSTANCE_DIMENSION = 'InstanceId';

/**
 * Refuses (ERR_AUTH_FORBIDDEN) a sender that names another server of its project as the instance its
 * samples are about: it would drive (or silence) that server's alarms. A value that is no server of
 * the project is let through (a Nova instance id, which hearth does not know).
 */
async function assertOwnInstance(trx: Transaction<Database>, sender: MetricSender, ids: string[]): Promise<void> {
  const other = await trx
    .selectFrom('servers')
    .select('id')
    .where('project_id', '=', sender.projectId)
    .where('id', 'in', ids)
    .where('id', '!=', sender.serverId)
    .executeTakeFirst();
  if (other)
    throw new HearthError('ERR_AUTH_FORBIDDEN', {
      reason: `server ${sender.serverId} may not send samples with ${INSTANCE_DIMENSION}=${other.id}, another server's id`,
    });
}

/** Samples a server may send at once (ten full puts) before SAMPLE_RATE_PER_SECOND holds it back. */
export const SAMPLE_BURST = 1_000;
/** Samples per second a server may send in the long run: 600 a minute, far more than cfn-push-stats sends. */
export const SAMPLE_RATE_PER_SECOND = 10;
/** Servers whose sending rate is tracked at once; past it the longest tracked is forgotten (its bucket full again). */
const SENDERS_TRACKED = 100_000;

/**
 * A token bucket of samples per server, on this replica: samples are kept by count across the whole
 * table, so one VM sending in a loop would otherwise push every other VM's out and leave their alarms
 * without data. O(1) per put, in memory, bounded in size, and a deleted server's bucket goes with it.
 */
class SampleRateLimit {
  /** server id (unique across projects) -> its bucket. */
  private readonly buckets = new Map<string, { tokens: number; atMs: number }>();

  /** Takes `count` samples from the sender's bucket, or throws ERR_RATE_LIMITED saying when they fit. */
  take(sender: MetricSender, count: number): void {
    // Monotonic: on the wall clock, a step back (NTP) stopped the refill for as long as the step.
    const nowMs = performance.now();
    const key = sender.serverId;
    const bucket = this.buckets.get(key) ?? { tokens: SAMPLE_BURST, atMs: nowMs };
    const tokens = Math.min(SAMPLE_BURST, bucket.tokens + (Math.max(0, nowMs - bucket.atMs) / 1000) * SAMPLE_RATE_PER_SECOND);
    if (tokens < count) {
      const retryAfter = Math.ceil((count - tokens) / SAMPLE_RATE_PER_SECOND);
      throw new HearthError('ERR_RATE_LIMITED', { retry_after: retryAfter });
    }
    this.buckets.delete(key);
    if (this.buckets.size >= SENDERS_TRACKED) this.buckets.delete(this.buckets.keys().next().value!);
    this.buckets.set(key, { tokens: tokens - count, atMs: nowMs });
  }

  /** Drops a deleted server's bucket: churned servers (autoscaling) left theirs until SENDERS_TRACKED pushed them out. */
  forget(serverId: string): void {
    this.buckets.delete(serverId);
  }

  /** Servers whose rate is tracked. */
  get size(): number {
    return this.buckets.size;
  }
}

/** Who sent samples: a server's agent. */
export interface MetricSender {
  projectId: string;
  serverId: string;
}

/** Metric samples: stored from agents (native JSON or PutMetricData), listed, read by the evaluator, pruned. */
export class MetricService {
  private readonly rateLimit = new SampleRateLimit();

  constructor(
    private readonly store: Store,
    /** Retention limits (frozen). */
    readonly retention: MetricRetention = DEFAULT_METRIC_RETENTION,
  ) {}

  /**
   * Stores samples attributed to the sender's server; refuses the whole put if one sample is out of
   * range, names in GROUP_DIMENSION a scaling group of the project the server is not a member of, or
   * names in INSTANCE_DIMENSION another server of the project. Past the sender's rate (SAMPLE_BURST,
   * then SAMPLE_RATE_PER_SECOND) it stores nothing and throws ERR_RATE_LIMITED with `retry_after`.
   */
  async put(sender: MetricSender, put: MetricPut): Promise<{ stored: number }> {
    const nowMs = Date.now();
    const rows = put.samples.map((sample, index) => this.toRow(sender, put.namespace ?? DEFAULT_METRIC_NAMESPACE, sample, index, nowMs));
    this.rateLimit.take(sender, rows.length);
    const claimed = [...new Set(put.samples.flatMap((sample) => sample.dimensions?.[GROUP_DIMENSION] ?? []))];
    const instances = [...new Set(put.samples.flatMap((sample) => sample.dimensions?.[INSTANCE_DIMENSION] ?? []))].filter(
      (id) => id !== sender.serverId,
    );
    await this.store.write(async ({ trx, now }) => {
      // In the write transaction: a server removed from the group meanwhile speaks for it no more.
      if (claimed.length > 0) await assertGroupMember(trx, sender, claimed);
      if (instances.length > 0) await assertOwnInstance(trx, sender, instances);
      await trx
        .insertInto('metric_samples')
        .values(rows.map((row) => ({ ...row, time: row.time ?? now })))
        .execute();
    });
    return { stored: rows.length };
  }

  private toRow(sender: MetricSender, namespace: string, sample: MetricSampleInput, index: number, nowMs: number) {
    assertPrintable(namespace, sample, index);
    const valueProblem = metricValueProblem(`sample ${index} value`, sample.value);
    if (valueProblem) throw new HearthError('ERR_METRIC_INVALID', { reason: valueProblem });
    let time: string | null = null;
    if (sample.timestamp !== undefined) {
      // The schema checks the shape only: `2026-13-45T99:99:99Z` is no time, and `2026-02-30` no day.
      const ms = parseSampleTime(sample.timestamp);
      if (ms === null)
        throw new HearthError('ERR_METRIC_INVALID', {
          reason: `sample ${index} has timestamp ${sample.timestamp}, which is not a date and time`,
        });
      const oldest = nowMs - this.retention.maxAgeSeconds * 1000;
      if (ms < oldest || ms > nowMs + MAX_FUTURE_MS) {
        throw new HearthError('ERR_METRIC_INVALID', {
          reason: `sample ${index} has timestamp ${sample.timestamp}, outside the ${this.retention.maxAgeSeconds} s kept and at most 2 h ahead; send it without a timestamp to use the time of arrival`,
        });
      }
      time = new Date(ms).toISOString();
    }
    return {
      project_id: sender.projectId,
      server_id: sender.serverId,
      namespace: sample.namespace ?? namespace,
      metric_name: sample.metric_name,
      unit: sample.unit ?? null,
      value: sample.value,
      dimensions: canonicalDimensions(sample.dimensions),
      time,
    };
  }

  /** Drops what this replica keeps in memory for a deleted server (its sending rate). */
  forgetServer(serverId: string): void {
    this.rateLimit.forget(serverId);
  }

  /** Servers whose sending rate this replica tracks: bounded by the live ones, whatever the churn. */
  get trackedSenders(): number {
    return this.rateLimit.size;
  }

  /** A project's samples, newest first. */
  async list(projectId: string, query: MetricListQuery): Promise<MetricSample[]> {
    let select = this.store.reader.selectFrom('metric_samples').selectAll().where('project_id', '=', projectId);
    if (query.namespace) select = select.where('namespace', '=', query.namespace);
    if (query.metric_name) select = select.where('metric_name', '=', query.metric_name);
    if (query.server_id) select = select.where('server_id', '=', query.server_id);
    if (query.since) {
      const since = parseSampleTime(query.since);
      if (since === null) throw new HearthError('ERR_REQUEST_INVALID', { reason: `since ${query.since} is not a date and time` });
      select = select.where('time', '>=', new Date(since).toISOString());
    }
    const rows = await select
      .orderBy('time', 'desc')
      .orderBy('id', 'desc')
      .limit(query.limit ?? 100)
      .execute();
    return rows.map(sampleFromRow);
  }

  /**
   * The values of one metric at or after `sinceIso` whose dimensions include `dimensions` (for the
   * evaluator). A value outside ±2^360, stored before puts were held to it, is skipped (as if it had
   * been refused), so a statistic is never Infinity or NaN.
   */
  async valuesFor(
    projectId: string,
    namespace: string,
    metricName: string,
    dimensions: MetricDimensions,
    sinceIso: string,
  ): Promise<TimedValue[]> {
    const rows = await this.store.reader
      .selectFrom('metric_samples')
      .select(['value', 'time', 'dimensions'])
      .where('project_id', '=', projectId)
      .where('namespace', '=', namespace)
      .where('metric_name', '=', metricName)
      .where('time', '>=', sinceIso)
      .execute();
    return rows
      .filter((row) => dimensionsMatch(dimensions, JSON.parse(row.dimensions) as MetricDimensions))
      .map((row) => ({ timeMs: Date.parse(row.time), value: Number(row.value) }))
      .filter((sample) => isMetricValueInRange(sample.value));
  }

  /** Deletes samples past the retention limits (age, then count), inside the caller's transaction; returns how many. */
  async prune(trx: Transaction<Database>, nowIso: string): Promise<number> {
    const cutoff = new Date(Date.parse(nowIso) - this.retention.maxAgeSeconds * 1000).toISOString();
    const byAge = await trx.deleteFrom('metric_samples').where('time', '<', cutoff).executeTakeFirst();
    const keepFrom = await trx
      .selectFrom('metric_samples')
      .select('id')
      .orderBy('id', 'desc')
      .offset(this.retention.maxSamples - 1)
      .limit(1)
      .executeTakeFirst();
    let byCount = 0n;
    if (keepFrom) byCount = (await trx.deleteFrom('metric_samples').where('id', '<', keepFrom.id).executeTakeFirst()).numDeletedRows;
    return Number(byAge.numDeletedRows + byCount);
  }
}

/** Refuses a sample whose namespace, name, unit or dimensions hold a control character (the schema checks lengths only). */
function assertPrintable(namespace: string, sample: MetricSampleInput, index: number): void {
  const fields: Array<[string, string | undefined]> = [
    ['namespace', sample.namespace ?? namespace],
    ['metric_name', sample.metric_name],
    ['unit', sample.unit],
    ...Object.entries(sample.dimensions ?? {}).flatMap(([name, value]): Array<[string, string]> => [
      ['dimension name', name],
      [`dimension ${name}`, value],
    ]),
  ];
  for (const [field, text] of fields) {
    const problem = text === undefined ? null : metricTextProblem(`sample ${index} ${field}`, text);
    if (problem) throw new HearthError('ERR_METRIC_INVALID', { reason: problem });
  }
}

/** A stored sample in the API's shape. */
export function sampleFromRow(row: MetricSampleRow): MetricSample {
  return {
    namespace: row.namespace,
    metric_name: row.metric_name,
    value: Number(row.value),
    unit: row.unit,
    dimensions: JSON.parse(row.dimensions) as MetricDimensions,
    server_id: row.server_id,
    time: heatTime(new Date(row.time)),
  };
}

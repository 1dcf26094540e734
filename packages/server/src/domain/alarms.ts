import { randomUUID } from 'node:crypto';
import {
  DEFAULT_METRIC_NAMESPACE,
  heatTime,
  type Alarm,
  type AlarmCreate,
  type AlarmDeliveries,
  type AlarmHistoryItem,
  type AlarmState,
  type MetricDimensions,
} from '@hearth/protocol';
import type { Store } from '../store/store.ts';
import type { AlarmRow } from '../store/schema-metrics-alarms.ts';
import { HearthError } from './errors.ts';
import { canonicalDimensions, type MetricRetention } from './metrics.ts';
import { hideUserinfo, outboundUrlProblem } from './link-local.ts';
import { resourceEvent } from './events.ts';

/** The event row of something that happened to an alarm. */
export function alarmEvent(row: Pick<AlarmRow, 'id' | 'project_id'>, type: string, message: string, data: Record<string, unknown> = {}) {
  return resourceEvent({ project_id: row.project_id, resource_type: 'alarm', resource_id: row.id, server_id: null }, type, message, data);
}

/** Threshold alarms: create, show, list, delete, history. The evaluator (alarm-evaluator.ts) moves their state. */
export class AlarmService {
  constructor(
    private readonly store: Store,
    private readonly retention: MetricRetention,
  ) {}

  /** Creates an alarm in INSUFFICIENT_DATA; it is judged from the evaluator's next run. */
  async create(projectId: string, body: AlarmCreate): Promise<Alarm> {
    this.validate(body);
    const row = await this.store.write(async ({ trx, now, event }) => {
      const clash = await trx
        .selectFrom('alarms')
        .select('id')
        .where('project_id', '=', projectId)
        .where('name', '=', body.name)
        .executeTakeFirst();
      if (clash) throw new HearthError('ERR_ALARM_EXISTS', { name: body.name });
      const values: AlarmRow = {
        id: randomUUID(),
        project_id: projectId,
        name: body.name,
        description: body.description ?? '',
        namespace: body.namespace ?? DEFAULT_METRIC_NAMESPACE,
        metric_name: body.metric_name,
        dimensions: canonicalDimensions(body.dimensions),
        statistic: body.statistic,
        period_s: body.period,
        evaluation_periods: body.evaluation_periods ?? 1,
        threshold: body.threshold,
        comparison_operator: body.comparison_operator,
        alarm_actions: JSON.stringify(body.alarm_actions ?? []),
        ok_actions: JSON.stringify(body.ok_actions ?? []),
        insufficient_data_actions: JSON.stringify(body.insufficient_data_actions ?? []),
        enabled: body.enabled === false ? 0 : 1,
        repeat_actions: body.repeat_actions === true ? 1 : 0,
        state: 'INSUFFICIENT_DATA',
        state_reason: 'Unchecked: the alarm was just created',
        state_updated_at: now,
        last_evaluated_at: null,
        last_notified_at: null,
        created_at: now,
      };
      await trx.insertInto('alarms').values(values).execute();
      event(alarmEvent(values, 'alarm.created', `Alarm ${values.name} created on ${values.namespace}/${values.metric_name}`));
      return values;
    });
    return this.toApi(row, { pending: 0, failed: 0, delivered: 0, last_error: null });
  }

  /** Refuses what the schema cannot: action URLs hearth will not call, windows longer than the samples are kept. */
  private validate(body: AlarmCreate): void {
    const windowSeconds = body.period * (body.evaluation_periods ?? 1);
    if (windowSeconds > this.retention.maxAgeSeconds) {
      throw new HearthError('ERR_ALARM_INVALID', {
        reason: `period × evaluation_periods is ${windowSeconds} s, longer than the ${this.retention.maxAgeSeconds} s samples are kept`,
      });
    }
    for (const key of ['alarm_actions', 'ok_actions', 'insufficient_data_actions'] as const) {
      for (const url of body[key] ?? []) {
        const problem = outboundUrlProblem(key, url);
        if (problem) throw new HearthError('ERR_ALARM_INVALID', { reason: problem });
      }
    }
  }

  /** A project's alarms by name. */
  async list(projectId: string): Promise<Alarm[]> {
    const rows = await this.store.reader.selectFrom('alarms').selectAll().where('project_id', '=', projectId).orderBy('name').execute();
    return Promise.all(rows.map(async (row) => this.toApi(row, await this.deliveries(row.id))));
  }

  /** One alarm by name. */
  async get(projectId: string, name: string): Promise<Alarm> {
    const row = await this.rowByName(projectId, name);
    return this.toApi(row, await this.deliveries(row.id));
  }

  /** Deletes an alarm with its history; its undelivered actions are dropped. */
  async delete(projectId: string, name: string): Promise<void> {
    const row = await this.rowByName(projectId, name);
    await this.store.write(async ({ trx, event }) => {
      // Checked again in the write transaction: a second delete at the same moment is a 404, not a second event.
      const current = await trx.selectFrom('alarms').select('id').where('id', '=', row.id).executeTakeFirst();
      if (!current) throw new HearthError('ERR_ALARM_NOT_FOUND', { name });
      await trx.deleteFrom('alarm_deliveries').where('alarm_id', '=', row.id).execute();
      await trx.deleteFrom('alarm_history').where('alarm_id', '=', row.id).execute();
      await trx.deleteFrom('alarms').where('id', '=', row.id).execute();
      event(alarmEvent(row, 'alarm.deleted', `Alarm ${row.name} deleted`));
    });
  }

  /** An alarm's state changes, newest first. */
  async history(projectId: string, name: string, limit = 100): Promise<AlarmHistoryItem[]> {
    const row = await this.rowByName(projectId, name);
    const rows = await this.store.reader
      .selectFrom('alarm_history')
      .selectAll()
      .where('alarm_id', '=', row.id)
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.map((h) => ({
      time: heatTime(new Date(h.time)),
      previous: h.previous_state,
      current: h.state,
      reason: h.reason,
      data: JSON.parse(h.data) as Record<string, unknown>,
    }));
  }

  private async rowByName(projectId: string, name: string): Promise<AlarmRow> {
    const row = await this.store.reader
      .selectFrom('alarms')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('name', '=', name)
      .executeTakeFirst();
    if (!row) throw new HearthError('ERR_ALARM_NOT_FOUND', { name });
    return row;
  }

  private async deliveries(alarmId: string): Promise<AlarmDeliveries> {
    const rows = await this.store.reader
      .selectFrom('alarm_deliveries')
      .select(['status', 'last_error', 'id'])
      .where('alarm_id', '=', alarmId)
      .orderBy('id')
      .execute();
    const count = (status: string) => rows.filter((r) => r.status === status).length;
    const lastError = rows.filter((r) => r.last_error !== null).at(-1)?.last_error ?? null;
    return { pending: count('pending'), failed: count('failed'), delivered: count('delivered'), last_error: lastError };
  }

  /** The API shape of a row. */
  toApi(row: AlarmRow, deliveries: AlarmDeliveries): Alarm {
    return {
      id: row.id,
      name: row.name,
      description: row.description,
      namespace: row.namespace,
      metric_name: row.metric_name,
      dimensions: JSON.parse(row.dimensions) as MetricDimensions,
      statistic: row.statistic,
      period: row.period_s,
      evaluation_periods: row.evaluation_periods,
      threshold: Number(row.threshold),
      comparison_operator: row.comparison_operator,
      // A basic-auth user and password stay stored (they are sent) but are never shown again.
      alarm_actions: (JSON.parse(row.alarm_actions) as string[]).map(hideUserinfo),
      ok_actions: (JSON.parse(row.ok_actions) as string[]).map(hideUserinfo),
      insufficient_data_actions: (JSON.parse(row.insufficient_data_actions) as string[]).map(hideUserinfo),
      enabled: row.enabled === 1,
      repeat_actions: row.repeat_actions === 1,
      state: row.state as AlarmState,
      state_reason: row.state_reason,
      state_updated_at: heatTime(new Date(row.state_updated_at)),
      last_evaluated_at: row.last_evaluated_at === null ? null : heatTime(new Date(row.last_evaluated_at)),
      created_at: heatTime(new Date(row.created_at)),
      deliveries,
    };
  }
}

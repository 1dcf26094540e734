import type { Alarm, AlarmCreate, AlarmHistoryItem, MetricListQuery, MetricPut, MetricPutResult, MetricSample } from '@hearth/protocol';
import type { Transport } from './http.ts';
import { guestPath, projectPath } from './paths.ts';
import { callForField } from './reply.ts';

/** Threshold alarms and metric samples: operator calls, and the agent's put. */
export interface MetricMethods {
  /** Creates an alarm (state INSUFFICIENT_DATA until its first evaluation); ERR_ALARM_EXISTS when the name is taken. */
  createAlarm(body: AlarmCreate): Promise<Alarm>;
  /** Lists the project's alarms by name. */
  listAlarms(): Promise<Alarm[]>;
  /** Fetches one alarm with its state and action deliveries. */
  getAlarm(name: string): Promise<Alarm>;
  /** An alarm's state changes, newest first (default at most 100). */
  alarmHistory(name: string, limit?: number): Promise<AlarmHistoryItem[]>;
  /** Deletes an alarm, its history and its undelivered actions. */
  deleteAlarm(name: string): Promise<void>;
  /** Stored samples, newest first, filtered by the query. */
  listMetrics(query?: MetricListQuery): Promise<MetricSample[]>;
  /** Agent call: sends samples for this server (the token must be the server's credential). */
  putMetrics(body: MetricPut): Promise<MetricPutResult>;
}

/** Builds the metric and alarm methods on a transport. */
export function metricMethods(transport: Transport): MetricMethods {
  const { project } = transport.options;
  const alarms = (...rest: string[]): string => projectPath(project, 'alarms', ...rest);
  return {
    createAlarm: (body) => callForField<Alarm>(transport, { method: 'POST', path: alarms(), auth: 'operator', json: body }, 'alarm'),
    listAlarms: () => callForField<Alarm[]>(transport, { method: 'GET', path: alarms(), auth: 'operator' }, 'alarms'),
    getAlarm: (name) => callForField<Alarm>(transport, { method: 'GET', path: alarms(name), auth: 'operator' }, 'alarm'),
    alarmHistory: (name, limit) =>
      callForField<AlarmHistoryItem[]>(
        transport,
        { method: 'GET', path: alarms(name, 'history'), auth: 'operator', query: { limit } },
        'history',
      ),
    async deleteAlarm(name) {
      await transport.call({ method: 'DELETE', path: alarms(name), auth: 'operator' });
    },
    listMetrics: (query = {}) =>
      callForField<MetricSample[]>(
        transport,
        { method: 'GET', path: projectPath(project, 'metrics'), auth: 'operator', query: { ...query } },
        'samples',
      ),
    async putMetrics(body) {
      const reply = await transport.call({ method: 'POST', path: guestPath('metrics'), auth: 'agent', json: body });
      return reply.body as MetricPutResult;
    },
  };
}

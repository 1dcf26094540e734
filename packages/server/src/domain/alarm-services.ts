// Metrics and alarms wired together: the sample store, the alarms, the evaluator and its action deliverer.
import type { Store } from '../store/store.ts';
import { DEFAULT_METRIC_RETENTION, MetricService, type MetricRetention } from './metrics.ts';
import { AlarmService } from './alarms.ts';
import { AlarmActionDeliverer, type DeliveryOptions } from './alarm-actions.ts';
import { AlarmEvaluator, type EvaluatorOptions } from './alarm-evaluator.ts';

/** Settings of metrics and alarms, each part defaulted where it is defined. */
export interface AlarmSettings {
  /** Schedule, lease length, holder id. */
  evaluator?: Partial<EvaluatorOptions>;
  /** How long samples are kept. */
  retention?: Partial<MetricRetention>;
  /** How action deliveries are retried. */
  delivery?: Partial<DeliveryOptions>;
}

/** The metric, alarm and evaluator services, wired together (the evaluator is not started). */
export function createAlarmServices(store: Store, settings: AlarmSettings, logError: (error: unknown) => void) {
  const metricSamples = new MetricService(store, Object.freeze({ ...DEFAULT_METRIC_RETENTION, ...settings.retention }));
  const alarms = new AlarmService(store, metricSamples.retention);
  const deliverer = new AlarmActionDeliverer(store, settings.delivery);
  const alarmEvaluator = new AlarmEvaluator(store, metricSamples, deliverer, logError, settings.evaluator);
  return { metricSamples, alarms, alarmEvaluator };
}

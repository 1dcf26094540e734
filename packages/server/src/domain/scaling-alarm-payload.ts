/** What an alarm webhook body says, whichever notifier sent it. */
export interface AlarmPayload {
  /** Which shape was recognised. */
  source: 'aodh' | 'alertmanager' | 'hearth-alarm' | 'empty' | 'plain';
  /** The alarm state, lower-case (`alarm`, `ok`, `insufficient_data`, `firing`, `resolved`), or null when the body names none. */
  state: string | null;
  /** The event reason to record. */
  reason: string;
  /** False when the body says the alarm cleared (Alertmanager `resolved`): recorded, never acted on. */
  actionable: boolean;
}

const MAX_REASON = 500;

function text(value: unknown): string | null {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

function clip(reason: string): string {
  if (reason.length <= MAX_REASON) return reason;
  // Never between the two halves of a surrogate pair (an emoji): a lone half is stored as U+FFFD
  // while the reply would carry it as it is.
  const end = /[\uD800-\uDBFF]/.test(reason.charAt(MAX_REASON - 2)) ? MAX_REASON - 2 : MAX_REASON - 1;
  return `${reason.slice(0, end)}…`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Prometheus Alertmanager's webhook (`version: "4"`, `status`, `alerts[]`): acts on `firing` only. */
function alertmanager(body: Record<string, unknown>): AlarmPayload {
  const status = String(body.status).toLowerCase();
  const alerts = body.alerts as unknown[];
  const labels = [body.groupLabels, body.commonLabels].find(isObject);
  const first = alerts.find(isObject);
  const name = text(labels?.alertname) ?? text(isObject(first?.labels) ? first.labels.alertname : undefined) ?? 'alert';
  const annotations = isObject(body.commonAnnotations) ? body.commonAnnotations : {};
  const summary = text(annotations.summary) ?? text(annotations.description);
  return {
    source: 'alertmanager',
    state: status,
    reason: clip(`alertmanager: ${name} ${status} (${alerts.length} alert(s))${summary ? `: ${summary}` : ''}`),
    actionable: status === 'firing',
  };
}

/**
 * Reads an alarm webhook body: Aodh's notifier (`current`, `previous`, `reason`; Heat's event reason
 * `alarm state changed from <previous> to <current> (<reason>)`), hearth's own alarms and Heat's
 * old watch rules (`{alarm, state}`), Alertmanager's webhook (`status` firing/resolved, `alerts`),
 * and anything else: no body, a string, or JSON of another shape (a plain signal).
 */
export function parseAlarmPayload(body: unknown): AlarmPayload {
  if (body === undefined || body === null || (typeof body === 'string' && body.trim() === ''))
    return { source: 'empty', state: null, reason: 'Signal received (no body)', actionable: true };
  if (typeof body === 'string') return { source: 'plain', state: null, reason: clip(`Signal: ${body.trim()}`), actionable: true };
  if (!isObject(body)) return { source: 'plain', state: null, reason: clip(`Signal: ${JSON.stringify(body)}`), actionable: true };
  if (Array.isArray(body.alerts) && (body.status === 'firing' || body.status === 'resolved')) return alertmanager(body);
  const current = text(body.current);
  if (current !== null) {
    const previous = text(body.previous) ?? 'unknown';
    const why = text(body.reason);
    const name = text(body.alarm_name);
    return {
      source: 'aodh',
      state: current.toLowerCase(),
      reason: clip(`${name ? `${name}: ` : ''}alarm state changed from ${previous} to ${current}${why ? ` (${why})` : ''}`),
      actionable: true,
    };
  }
  const state = text(body.state);
  if (state !== null) {
    const name = text(body.alarm) ?? text(body.alarm_name);
    return {
      source: 'hearth-alarm',
      state: state.toLowerCase(),
      reason: clip(`alarm ${name ?? '(unnamed)'} is ${state}`),
      actionable: true,
    };
  }
  const why = text(body.reason) ?? text(body.message);
  return { source: 'plain', state: null, reason: clip(why ? `Signal: ${why}` : 'Signal received'), actionable: true };
}

/**
 * Whether a policy acts on a payload. Heat acts on every signal (since 2016); with
 * `actOnlyOnAlarm` a payload that names a state must say `alarm` or `firing` (one that names none
 * counts as an alarm, as Heat's older rule read it). A resolved Alertmanager payload never acts.
 */
export function shouldAct(payload: AlarmPayload, actOnlyOnAlarm: boolean): boolean {
  if (!payload.actionable) return false;
  if (!actOnlyOnAlarm || payload.state === null) return true;
  return payload.state === 'alarm' || payload.state === 'firing';
}

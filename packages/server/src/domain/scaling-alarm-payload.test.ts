import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAlarmPayload, shouldAct } from './scaling-alarm-payload.ts';

const aodh = {
  alarm_name: 'cpu_high',
  alarm_id: '0a5e-1',
  severity: 'low',
  previous: 'ok',
  current: 'alarm',
  reason: 'Transition to alarm due to 3 samples outside threshold',
  reason_data: { type: 'threshold' },
};

const alertmanager = (status: 'firing' | 'resolved') => ({
  version: '4',
  groupKey: '{}:{alertname="HighLoad"}',
  status,
  receiver: 'hearth',
  groupLabels: { alertname: 'HighLoad' },
  commonLabels: { alertname: 'HighLoad', severity: 'page' },
  commonAnnotations: { summary: 'load above 4' },
  externalURL: 'http://alertmanager:9093',
  alerts: [{ status, labels: { alertname: 'HighLoad', instance: 'vm1' }, annotations: {}, startsAt: '2026-01-01T00:00:00Z' }],
});

test("Aodh: Heat's reason text, state from `current`", () => {
  const parsed = parseAlarmPayload(aodh);
  assert.equal(parsed.source, 'aodh');
  assert.equal(parsed.state, 'alarm');
  assert.equal(parsed.reason, 'cpu_high: alarm state changed from ok to alarm (Transition to alarm due to 3 samples outside threshold)');
  assert.equal(shouldAct(parsed, false), true);
  assert.equal(shouldAct(parsed, true), true);
  const ok = parseAlarmPayload({ ...aodh, previous: 'alarm', current: 'ok' });
  assert.equal(ok.state, 'ok');
  assert.equal(shouldAct(ok, false), true, 'Heat acts on any state since 2016');
  assert.equal(shouldAct(ok, true), false, 'the option restores act-only-on-alarm');
});

test('Alertmanager: firing acts, resolved is recorded and never acts', () => {
  const firing = parseAlarmPayload(alertmanager('firing'));
  assert.equal(firing.source, 'alertmanager');
  assert.equal(firing.reason, 'alertmanager: HighLoad firing (1 alert(s)): load above 4');
  assert.equal(shouldAct(firing, false), true);
  assert.equal(shouldAct(firing, true), true);
  const resolved = parseAlarmPayload(alertmanager('resolved'));
  assert.equal(resolved.state, 'resolved');
  assert.equal(resolved.actionable, false);
  assert.equal(shouldAct(resolved, false), false);
  assert.equal(shouldAct(resolved, true), false);
});

test("hearth's own alarms and Heat's watch rules: {alarm, state}", () => {
  const parsed = parseAlarmPayload({ alarm: 'cpu', state: 'ALARM' });
  assert.equal(parsed.source, 'hearth-alarm');
  assert.equal(parsed.state, 'alarm');
  assert.equal(shouldAct(parseAlarmPayload({ alarm: 'cpu', state: 'OK' }), true), false);
  assert.equal(shouldAct(parseAlarmPayload({ alarm: 'cpu', state: 'OK' }), false), true);
});

test('empty and plain bodies act, even with act_only_on_alarm (no state given)', () => {
  for (const body of [undefined, null, '', '  ']) {
    const parsed = parseAlarmPayload(body);
    assert.equal(parsed.source, 'empty');
    assert.equal(shouldAct(parsed, true), true);
  }
  const plain = parseAlarmPayload('scale please');
  assert.equal(plain.source, 'plain');
  assert.equal(plain.reason, 'Signal: scale please');
  assert.equal(parseAlarmPayload({ reason: 'manual' }).reason, 'Signal: manual');
  assert.equal(parseAlarmPayload({}).reason, 'Signal received');
  assert.equal(parseAlarmPayload([1, 2]).source, 'plain');
  // An object with `status` but no alerts is not Alertmanager's: it is a plain signal.
  assert.equal(parseAlarmPayload({ status: 'resolved' }).source, 'plain');
});

test('reasons are clipped to 500 characters', () => {
  const long = parseAlarmPayload('x'.repeat(2000));
  assert.equal(long.reason.length, 500);
  assert.ok(long.reason.endsWith('…'));
});

test('a clip never splits a surrogate pair: the emoji at the cut goes whole', () => {
  const reason = parseAlarmPayload(`${'x'.repeat(490)}😀tail`).reason;
  assert.equal(reason, `Signal: ${'x'.repeat(490)}…`);
  const before = parseAlarmPayload(`${'x'.repeat(489)}😀tail`).reason;
  assert.equal(before, `Signal: ${'x'.repeat(489)}😀…`);
  assert.equal(before.length, 500);
});

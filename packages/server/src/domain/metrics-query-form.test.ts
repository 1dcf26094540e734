import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePutMetricData, putMetricDataXml } from './metrics-query-form.ts';
import { isHearthError } from './errors.ts';

test('PutMetricData as cfn-push-stats sends it: namespace, members, units, dimensions', () => {
  const parsed = parsePutMetricData({
    Action: 'PutMetricData',
    Version: '2010-08-01',
    Namespace: 'system/linux',
    'MetricData.member.1.MetricName': 'MemoryUtilization',
    'MetricData.member.1.Unit': 'Percent',
    'MetricData.member.1.Value': '91.5',
    'MetricData.member.1.Dimensions.member.1.Name': 'InstanceId',
    'MetricData.member.1.Dimensions.member.1.Value': 'i-123',
    'MetricData.member.1.Dimensions.member.2.Name': 'AlarmName',
    'MetricData.member.1.Dimensions.member.2.Value': 'web-mem',
    'MetricData.member.2.MetricName': 'Heartbeat',
    'MetricData.member.2.Value': '1',
    'MetricData.member.2.Timestamp': '2026-01-01T00:00:00Z',
  });
  assert.equal(parsed.namespace, 'system/linux');
  assert.deepEqual(parsed.samples, [
    {
      metric_name: 'MemoryUtilization',
      value: 91.5,
      namespace: 'system/linux',
      unit: 'Percent',
      dimensions: { InstanceId: 'i-123', AlarmName: 'web-mem' },
    },
    { metric_name: 'Heartbeat', value: 1, namespace: 'system/linux', dimensions: {}, timestamp: '2026-01-01T00:00:00.000Z' },
  ]);
});

test('the namespace defaults to system/linux; members are ordered by number, gaps allowed', () => {
  const parsed = parsePutMetricData({
    'MetricData.member.3.MetricName': 'B',
    'MetricData.member.3.Value': '2',
    'MetricData.member.1.MetricName': 'A',
    'MetricData.member.1.Value': '-1e2',
  });
  assert.equal(parsed.namespace, 'system/linux');
  assert.deepEqual(
    parsed.samples.map((s) => [s.metric_name, s.value]),
    [
      ['A', -100],
      ['B', 2],
    ],
  );
});

function reasonOf(params: Record<string, string>): string {
  try {
    parsePutMetricData(params);
  } catch (error) {
    assert.ok(isHearthError(error));
    assert.equal(error.code, 'ERR_METRIC_INVALID');
    return error.message;
  }
  assert.fail('expected ERR_METRIC_INVALID');
}

test('bad PutMetricData is refused with the offending parameter', () => {
  assert.match(reasonOf({ Namespace: 'x' }), /no MetricData/);
  assert.match(reasonOf({ 'MetricData.member.1.Value': '1' }), /member\.1\.MetricName is missing/);
  assert.match(reasonOf({ 'MetricData.member.1.MetricName': 'A', 'MetricData.member.1.Value': 'high' }), /Value "high" is not a number/);
  assert.match(reasonOf({ 'MetricData.member.1.MetricName': 'A' }), /Value null is not a number/);
  assert.match(
    reasonOf({ 'MetricData.member.1.MetricName': 'A', 'MetricData.member.1.Value': '1', 'MetricData.member.1.StatisticValues.Sum': '3' }),
    /StatisticValues\.Sum is not supported/,
  );
  assert.match(
    reasonOf({
      'MetricData.member.1.MetricName': 'A',
      'MetricData.member.1.Value': '1',
      'MetricData.member.1.Dimensions.member.1.Name': 'InstanceId',
    }),
    /Dimensions\.member\.1 needs both Name and Value/,
  );
  assert.match(
    reasonOf({ 'MetricData.member.1.MetricName': 'A', 'MetricData.member.1.Value': '1', 'MetricData.member.1.Timestamp': 'yesterday' }),
    /Timestamp yesterday is not an ISO 8601 time/,
  );
});

// cfn-push-stats sends every Nova meta tag of the server, plus InstanceId, as dimensions: with
// CloudWatch's old limit of 10, a server with ten tags had every sample refused.
test('PutMetricData takes up to 30 dimensions, as CloudWatch does, and refuses the 31st', () => {
  const withDimensions = (count: number) => {
    const params: Record<string, string> = { 'MetricData.member.1.MetricName': 'MemoryUtilization', 'MetricData.member.1.Value': '12.5' };
    for (let m = 1; m <= count; m++) {
      params[`MetricData.member.1.Dimensions.member.${m}.Name`] = m === 1 ? 'InstanceId' : `metering.tag${m}`;
      params[`MetricData.member.1.Dimensions.member.${m}.Value`] = `v${m}`;
    }
    return params;
  };
  assert.equal(Object.keys(parsePutMetricData(withDimensions(12)).samples[0]!.dimensions ?? {}).length, 12);
  assert.equal(Object.keys(parsePutMetricData(withDimensions(30)).samples[0]!.dimensions ?? {}).length, 30);
  assert.match(reasonOf(withDimensions(31)), /has 31 dimensions, more than 30/);
});

test('PutMetricData names, units and dimensions longer than the JSON routes take are refused with the limit', () => {
  const sample = { 'MetricData.member.1.MetricName': 'A', 'MetricData.member.1.Value': '1' };
  const dimension = (name: string, value: string) => ({
    ...sample,
    'MetricData.member.1.Dimensions.member.1.Name': name,
    'MetricData.member.1.Dimensions.member.1.Value': value,
  });
  assert.match(reasonOf({ ...sample, Namespace: 'n'.repeat(256) }), /Namespace is 256 characters long; at most 255 are stored/);
  assert.match(reasonOf({ ...sample, 'MetricData.member.1.MetricName': 'm'.repeat(256) }), /member\.1\.MetricName is 256 characters/);
  assert.match(reasonOf({ ...sample, 'MetricData.member.1.Unit': 'u'.repeat(65) }), /member\.1\.Unit is 65 characters long; at most 64/);
  assert.match(reasonOf(dimension('d'.repeat(256), 'v')), /Dimensions\.member\.1\.Name is 256 characters/);
  assert.match(reasonOf(dimension('d', 'v'.repeat(256))), /Dimensions\.member\.1\.Value is 256 characters/);
  // Characters, as the database counts them, not UTF-16 units: 255 astral characters fit.
  const parsed = parsePutMetricData({ ...dimension('d'.repeat(255), '🔥'.repeat(255)), Namespace: 'n'.repeat(255) });
  assert.equal(parsed.samples[0]?.dimensions?.['d'.repeat(255)], '🔥'.repeat(255));
});

test('PutMetricData with an empty or control-character name, namespace, unit or dimension is refused, naming the parameter', () => {
  const sample = { 'MetricData.member.1.MetricName': 'A', 'MetricData.member.1.Value': '1' };
  const dimension = (name: string, value: string) => ({
    ...sample,
    'MetricData.member.1.Dimensions.member.1.Name': name,
    'MetricData.member.1.Dimensions.member.1.Value': value,
  });
  assert.match(reasonOf({ ...sample, Namespace: '' }), /Namespace is empty/);
  assert.match(reasonOf({ ...sample, 'MetricData.member.1.MetricName': '' }), /member\.1\.MetricName is empty/);
  assert.match(reasonOf(dimension('', 'v')), /Dimensions\.member\.1\.Name is empty/);
  assert.match(
    reasonOf({ ...sample, Namespace: 'system\u0001linux' }),
    /Namespace "system\\u0001linux" contains the control character U\+0001/,
  );
  assert.match(
    reasonOf({ ...sample, 'MetricData.member.1.MetricName': 'cpu\nx' }),
    /member\.1\.MetricName "cpu\\nx" contains the control character U\+000A/,
  );
  assert.match(reasonOf({ ...sample, 'MetricData.member.1.Unit': 'Per\u007fcent' }), /member\.1\.Unit .* U\+007F/);
  assert.match(reasonOf(dimension('Inst\u0000', 'i-1')), /Dimensions\.member\.1\.Name .* U\+0000/);
  assert.match(reasonOf(dimension('InstanceId', 'x\u001b[31m')), /Dimensions\.member\.1\.Value .* U\+001B/);
  assert.match(reasonOf(dimension('InstanceId', 'x\u0085')), /U\+0085/, 'C1 controls too');
  // cfn-push-stats sends every Nova meta tag as a dimension, and a meta value may be empty: kept, as are spaces.
  assert.deepEqual(parsePutMetricData(dimension('metering.stack', '')).samples[0]?.dimensions, { 'metering.stack': '' });
  assert.deepEqual(parsePutMetricData(dimension('Server Name', 'web 1')).samples[0]?.dimensions, { 'Server Name': 'web 1' });
});

test('PutMetricData values must be decimal numbers; members and dimensions count from 1 and a dimension name appears once', () => {
  const withValue = (value: string) => ({ 'MetricData.member.1.MetricName': 'A', 'MetricData.member.1.Value': value });
  for (const value of ['0x10', '0b11', ' 5 ', '1_000', '', 'Infinity', 'NaN'])
    assert.match(reasonOf(withValue(value)), /is not a number/, value);
  // A decimal too large for a double is out of CloudWatch's range (metrics-value-range.test.ts).
  assert.match(reasonOf(withValue('1e400')), /Value 1e400 is outside the range/);
  for (const [value, expected] of [
    ['12.5', 12.5],
    ['-3', -3],
    ['+.5', 0.5],
    ['1e-05', 0.00001],
    ['7.', 7],
  ] as const)
    assert.equal(parsePutMetricData(withValue(value)).samples[0]?.value, expected, value);
  assert.match(
    reasonOf({ 'MetricData.member.0.MetricName': 'A', 'MetricData.member.0.Value': '1' }),
    /member\.0\.MetricName counts from 0/,
  );
  assert.match(
    reasonOf({
      ...withValue('1'),
      'MetricData.member.1.Dimensions.member.0.Name': 'A',
      'MetricData.member.1.Dimensions.member.0.Value': 'x',
    }),
    /Dimensions\.member\.0\.Name counts from 0/,
  );
  assert.match(
    reasonOf({
      ...withValue('1'),
      'MetricData.member.1.Dimensions.member.1.Name': 'AlarmName',
      'MetricData.member.1.Dimensions.member.1.Value': 'a',
      'MetricData.member.1.Dimensions.member.2.Name': 'AlarmName',
      'MetricData.member.1.Dimensions.member.2.Value': 'b',
    }),
    /Dimensions\.member\.2\.Name AlarmName repeats Dimensions\.member\.1/,
  );
  assert.match(
    reasonOf({
      ...withValue('1'),
      'MetricData.member.1.Dimensions.member.1.Name': '__proto__',
      'MetricData.member.1.Dimensions.member.1.Value': 'x',
    }),
    /Dimensions\.member\.1\.Name is __proto__/,
  );
});

test('the reply is CloudWatch XML with the request id', () => {
  assert.equal(
    putMetricDataXml('req-1<'),
    '<PutMetricDataResponse xmlns="http://monitoring.amazonaws.com/doc/2010-08-01/"><ResponseMetadata><RequestId>req-1</RequestId></ResponseMetadata></PutMetricDataResponse>',
  );
});

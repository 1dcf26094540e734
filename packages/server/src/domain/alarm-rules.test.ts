import { test } from 'node:test';
import assert from 'node:assert/strict';
import { breaches, datapointsOf, decide, statisticOf, type AlarmRule } from './alarm-rules.ts';

const NOW = Date.parse('2026-01-01T00:10:00.000Z');
const rule = (extra: Partial<AlarmRule> = {}): AlarmRule => ({
  statistic: 'Average',
  comparisonOperator: 'GreaterThanThreshold',
  threshold: 80,
  periodSeconds: 60,
  evaluationPeriods: 1,
  ...extra,
});
/** A sample `secondsAgo` before NOW. */
const at = (secondsAgo: number, value: number) => ({ timeMs: NOW - secondsAgo * 1000, value });

test('statistics over a period; empty periods have a datapoint only for SampleCount and Sum', () => {
  const values = [4, 1, 7];
  assert.equal(statisticOf(values, 'SampleCount'), 3);
  assert.equal(statisticOf(values, 'Sum'), 12);
  assert.equal(statisticOf(values, 'Average'), 4);
  assert.equal(statisticOf(values, 'Minimum'), 1);
  assert.equal(statisticOf(values, 'Maximum'), 7);
  assert.equal(statisticOf([], 'SampleCount'), 0);
  assert.equal(statisticOf([], 'Sum'), 0);
  assert.equal(statisticOf([], 'Average'), null);
  assert.equal(statisticOf([], 'Minimum'), null);
  assert.equal(statisticOf([], 'Maximum'), null);
});

test('comparison operators, at and around the threshold', () => {
  assert.equal(breaches(81, 'GreaterThanThreshold', 80), true);
  assert.equal(breaches(80, 'GreaterThanThreshold', 80), false);
  assert.equal(breaches(80, 'GreaterThanOrEqualToThreshold', 80), true);
  assert.equal(breaches(79, 'GreaterThanOrEqualToThreshold', 80), false);
  assert.equal(breaches(79, 'LessThanThreshold', 80), true);
  assert.equal(breaches(80, 'LessThanThreshold', 80), false);
  assert.equal(breaches(80, 'LessThanOrEqualToThreshold', 80), true);
  assert.equal(breaches(81, 'LessThanOrEqualToThreshold', 80), false);
});

test('periods end at now, oldest first; a sample on a boundary belongs to the earlier period, one at now to the last', () => {
  const points = datapointsOf([at(120, 1), at(60, 2), at(1, 3), at(0, 99), at(200, 50)], rule({ evaluationPeriods: 2 }), NOW);
  assert.deepEqual(
    points.map((p) => [new Date(p.startMs).toISOString(), p.value]),
    [
      ['2026-01-01T00:08:00.000Z', 2],
      ['2026-01-01T00:09:00.000Z', 51],
    ],
  );
});

test('one breaching period is ALARM; one calm period is OK; no samples is INSUFFICIENT_DATA', () => {
  assert.equal(decide([at(10, 95), at(20, 90)], rule(), NOW).state, 'ALARM');
  const ok = decide([at(10, 95), at(20, 40)], rule(), NOW);
  assert.equal(ok.state, 'OK');
  assert.match(ok.reason, /Average > 80; most recent 67\.5/);
  assert.equal(decide([at(61, 95)], rule(), NOW).state, 'INSUFFICIENT_DATA');
  assert.equal(decide([], rule(), NOW).state, 'INSUFFICIENT_DATA');
});

test('evaluation periods are really used: ALARM only when the last N periods all breach', () => {
  const three = rule({ evaluationPeriods: 3 });
  assert.equal(decide([at(150, 90), at(90, 91), at(30, 92)], three, NOW).state, 'ALARM');
  assert.equal(decide([at(150, 90), at(90, 10), at(30, 92)], three, NOW).state, 'OK', 'one calm period in the middle');
  const partial = decide([at(90, 91), at(30, 92)], three, NOW);
  assert.equal(partial.state, null, 'two of three periods breaching is not enough evidence either way');
  assert.match(partial.reason, /2 of the last 3 period/);
});

test('SampleCount < 1 fires when a server stops sending heartbeats', () => {
  const heartbeat = rule({ statistic: 'SampleCount', comparisonOperator: 'LessThanThreshold', threshold: 1, evaluationPeriods: 2 });
  assert.equal(decide([at(100, 1), at(30, 1)], heartbeat, NOW).state, 'OK');
  assert.equal(decide([at(100, 1)], heartbeat, NOW).state, 'OK', 'the older period still had one');
  assert.equal(decide([], heartbeat, NOW).state, 'ALARM');
});

test('Minimum, Maximum and Sum decide on their own statistic', () => {
  const samples = [at(10, 50), at(20, 100)];
  assert.equal(decide(samples, rule({ statistic: 'Maximum' }), NOW).state, 'ALARM');
  assert.equal(decide(samples, rule({ statistic: 'Minimum' }), NOW).state, 'OK');
  assert.equal(decide(samples, rule({ statistic: 'Sum', threshold: 149 }), NOW).state, 'ALARM');
  assert.equal(decide(samples, rule({ statistic: 'Sum', threshold: 150 }), NOW).state, 'OK');
});

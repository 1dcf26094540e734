import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  COMPARISON_OPERATORS,
  MAX_ALARM_ACTIONS,
  MAX_ALARM_PERIOD,
  MAX_EVALUATION_PERIODS,
  METRIC_STATISTICS,
  type Alarm,
} from '@hearth/protocol';
import { EXIT } from '../errors.ts';
import { runFake } from '../test-support.ts';
import {
  COMPARISONS,
  MAX_ALARM_ACTIONS as CLI_MAX_ACTIONS,
  MAX_ALARM_PERIOD as CLI_MAX_PERIOD,
  MAX_EVALUATION_PERIODS as CLI_MAX_EVALS,
  STATISTICS,
  alarmRule,
} from './alarm.ts';

function alarm(overrides: Partial<Alarm> = {}): Alarm {
  return {
    id: 'a1',
    name: 'cpu-high',
    description: '',
    namespace: 'system/linux',
    metric_name: 'CPUUtilization',
    dimensions: { AutoScalingGroupName: 'web' },
    statistic: 'Average',
    period: 60,
    evaluation_periods: 3,
    threshold: 80,
    comparison_operator: 'GreaterThanThreshold',
    alarm_actions: ['http://127.0.0.1:9/up'],
    ok_actions: [],
    insufficient_data_actions: [],
    enabled: true,
    repeat_actions: false,
    state: 'ALARM',
    state_reason: 'All of the last 3 period(s) of 60 s meet Average > 80; most recent 91',
    state_updated_at: '2026-01-01T00:00:00Z',
    last_evaluated_at: '2026-01-01T00:00:10Z',
    created_at: '2025-12-31T00:00:00Z',
    deliveries: { pending: 0, failed: 0, delivered: 1, last_error: null },
    ...overrides,
  };
}

test('the CLI copies of the protocol values are equal to the protocol', () => {
  assert.deepEqual(STATISTICS, METRIC_STATISTICS);
  assert.deepEqual(COMPARISONS, COMPARISON_OPERATORS);
  assert.equal(CLI_MAX_PERIOD, MAX_ALARM_PERIOD);
  assert.equal(CLI_MAX_ACTIONS, MAX_ALARM_ACTIONS);
  assert.equal(CLI_MAX_EVALS, MAX_EVALUATION_PERIODS);
});

test('alarm create sends the rule from its flags and prints the alarm', async () => {
  const ran = await runFake(
    [
      'alarm',
      'create',
      'cpu-high',
      '--metric',
      'CPUUtilization',
      '--dimension',
      'AutoScalingGroupName=web',
      '--statistic',
      'average',
      '--period',
      '60',
      '--evaluation-periods',
      '3',
      '--threshold',
      '80',
      '--comparison',
      'GreaterThanThreshold',
      '--alarm-action',
      'http://127.0.0.1:9/up',
      '--alarm-action',
      'http://127.0.0.1:9/page',
    ],
    { createAlarm: async () => alarm() },
  );
  assert.equal(ran.code, 0, ran.stderr);
  assert.deepEqual(ran.calls, [
    [
      'createAlarm',
      [
        {
          name: 'cpu-high',
          metric_name: 'CPUUtilization',
          statistic: 'Average',
          period: 60,
          threshold: 80,
          comparison_operator: 'GreaterThanThreshold',
          dimensions: { AutoScalingGroupName: 'web' },
          evaluation_periods: 3,
          alarm_actions: ['http://127.0.0.1:9/up', 'http://127.0.0.1:9/page'],
        },
      ],
    ],
  ]);
  assert.match(ran.stdout, /^rule: +Average\(system\/linux\/CPUUtilization \{AutoScalingGroupName=web\}\) > 80 for 3 x 60 s$/m);
  assert.match(ran.stdout, /^deliveries: +1 delivered, 0 pending, 0 failed$/m);
});

test('alarm create refuses bad flags before calling the server', async () => {
  const base = ['alarm', 'create', 'a', '--metric', 'M', '--statistic', 'Average', '--period', '60', '--threshold', '1'];
  for (const [extra, message] of [
    [['--comparison', 'Bigger'], /--comparison "Bigger" is not one of GreaterThanThreshold/],
    [['--comparison', 'LessThanThreshold', '--statistic', 'p99'], /--statistic "p99" is not one of SampleCount/],
    [['--comparison', 'LessThanThreshold', '--period', '0'], /--period "0" is not a whole number from 1 to 86400/],
    [['--comparison', 'LessThanThreshold', '--threshold', 'high'], /--threshold "high" is not a number/],
    [['--comparison', 'LessThanThreshold', '--dimension', 'InstanceId'], /--dimension "InstanceId" is not NAME=VALUE/],
    [
      ['--comparison', 'LessThanThreshold', '--dimension', '__proto__=i-1'],
      /--dimension "__proto__=i-1": hearth-server refuses a name __proto__/,
    ],
    [
      ['--comparison', 'LessThanThreshold', '--alarm-action', 'ftp://x'],
      /--alarm-action "ftp:\/\/x" is not an http\(s\) URL \(ERR_USAGE\)\nhearth: hint: give an http:\/\/ or https:\/\/ URL with a host/,
    ],
    [
      ['--comparison', 'LessThanThreshold', '--ok-action', 'alerts.example/hook'],
      /--ok-action "alerts\.example\/hook" is not an http\(s\) URL/,
    ],
    [
      ['--comparison', 'LessThanThreshold', '--insufficient-data-action', 'http://'],
      /--insufficient-data-action "http:\/\/" is not an http\(s\) URL/,
    ],
    [['--comparison', 'LessThanThreshold', '--alarm-action', 'https://u:pw@/x'], /--alarm-action "https:\/\/\*\*\*@\/x" is not/],
    [
      ['--comparison', 'LessThanThreshold', ...['1', '2', '3', '4', '5', '6'].flatMap((n) => ['--ok-action', `http://127.0.0.1:9/${n}`])],
      /--ok-action is given 6 times: an alarm takes at most 5 URLs per state/,
    ],
  ] as const) {
    const ran = await runFake([...base, ...extra], { createAlarm: async () => alarm() });
    assert.equal(ran.code, EXIT.USAGE, ran.stderr);
    assert.match(ran.stderr, message);
    assert.deepEqual(ran.calls, []);
  }
});

test('alarm list, show and history print tables and fields; --json prints the reply', async () => {
  const list = await runFake(['alarm', 'list'], { listAlarms: async () => [alarm(), alarm({ name: 'mem', state: 'OK' })] });
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^NAME +STATE +SINCE +RULE$/m);
  assert.match(list.stdout, /^mem +OK /m);
  const history = await runFake(['alarm', 'history', 'cpu-high', '--limit', '5', '--json'], {
    alarmHistory: async () => [{ time: '2026-01-01T00:00:00Z', previous: 'OK', current: 'ALARM', reason: 'r', data: {} }],
  });
  assert.equal(history.code, 0, history.stderr);
  assert.deepEqual(history.calls, [['alarmHistory', ['cpu-high', 5]]]);
  assert.equal(JSON.parse(history.stdout).history[0].current, 'ALARM');
  const show = await runFake(['alarm', 'show', 'cpu-high'], { getAlarm: async () => alarm() });
  assert.match(show.stdout, /^state: +ALARM$/m);
});

test('metrics put sends one sample; metrics list filters', async () => {
  const put = await runFake(['metrics', 'put', 'QueueDepth', '7', '--unit', 'Count', '--dimension', 'queue=jobs'], {
    putMetrics: async () => ({ stored: 1 }),
  });
  assert.equal(put.code, 0, put.stderr);
  assert.deepEqual(put.calls, [
    ['putMetrics', [{ samples: [{ metric_name: 'QueueDepth', value: 7, unit: 'Count', dimensions: { queue: 'jobs' } }] }]],
  ]);
  assert.equal(put.stdout, 'stored 1 sample(s)\n');
  const bad = await runFake(['metrics', 'put', 'QueueDepth', 'lots'], { putMetrics: async () => ({ stored: 1 }) });
  assert.equal(bad.code, EXIT.USAGE);
  assert.deepEqual(bad.calls, []);
  const proto = await runFake(['metrics', 'put', 'QueueDepth', '7', '--dimension', '__proto__=jobs'], {
    putMetrics: async () => ({ stored: 1 }),
  });
  assert.equal(proto.code, EXIT.USAGE, 'not sent without its dimension');
  assert.deepEqual(proto.calls, []);
  const list = await runFake(['metrics', 'list', '--metric', 'QueueDepth', '--since', '2026-01-01T00:00:00Z'], {
    listMetrics: async () => [
      {
        namespace: 'MyApp',
        metric_name: 'QueueDepth',
        value: 7,
        unit: 'Count',
        dimensions: { queue: 'jobs' },
        server_id: 's1',
        time: '2026-01-01T00:00:01Z',
      },
    ],
  });
  assert.equal(list.code, 0, list.stderr);
  assert.deepEqual(list.calls, [['listMetrics', [{ metric_name: 'QueueDepth', since: '2026-01-01T00:00:00Z' }]]]);
  assert.match(list.stdout, /^2026-01-01T00:00:01Z +MyApp +QueueDepth +7 +Count +s1 +queue=jobs$/m);
  const badSince = await runFake(['metrics', 'list', '--since', 'yesterday'], { listMetrics: async () => [] });
  assert.equal(badSince.code, EXIT.USAGE);
});

test('alarmRule reads as one line', () => {
  assert.equal(
    alarmRule(alarm({ dimensions: {}, comparison_operator: 'LessThanOrEqualToThreshold' })),
    'Average(system/linux/CPUUtilization) <= 80 for 3 x 60 s',
  );
});

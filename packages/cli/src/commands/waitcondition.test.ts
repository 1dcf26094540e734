import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WaitConditionPoll } from '@hearth/client';
import type { WaitCondition } from '@hearth/protocol';
import { EXIT, ExitError } from '../errors.ts';
import { runFake } from '../test-support.ts';
import { buildWaitConditionCreate, formatCondition } from './waitcondition.ts';
import {
  conditionFetchingText,
  conditionFinishText,
  conditionProgressText,
  conditionWaitExitError,
  formatConditionData,
} from './waitcondition-wait.ts';

/** A whole wait condition (its fields as the server sends them). */
function condition(overrides: Partial<WaitCondition> = {}): WaitCondition {
  return {
    name: 'ready',
    stack_id: 'stack-id',
    stack_name: 'web',
    arn: 'arn:openstack:heat::default:stacks/web/stack-id/resources/ready',
    count: 3,
    timeout: 600,
    max_failures: 0,
    min_success_percent: null,
    status: 'IN_PROGRESS',
    status_reason: null,
    received: 0,
    successes: 0,
    failures: 0,
    data: {},
    signals: [],
    deadline: '2030-01-01T00:10:00Z',
    creation_time: '2030-01-01T00:00:00Z',
    updated_time: null,
    handle: {
      cfn_url: 'http://127.0.0.1:8000/v1/waitcondition/arn?Signature=x',
      endpoint: 'http://127.0.0.1:8000/v1/default/stacks/web/stack-id/resources/ready/signal',
      token: 'wc-token',
      curl_cli: "curl -i -X POST -H 'X-Auth-Token: wc-token' http://127.0.0.1:8000/x",
      signal_url: 'http://127.0.0.1:8000/v1/signal/cap',
      expires_at: null,
    },
    ...overrides,
  };
}

test('buildWaitConditionCreate turns flags into the request body', () => {
  assert.deepEqual(
    buildWaitConditionCreate('ready', {
      stack: 'web',
      timeout: '600',
      count: '3',
      maxFailures: '1',
      minSuccessPercent: '66',
      urlExpiresIn: '3600',
    }),
    { name: 'ready', timeout: 600, count: 3, max_failures: 1, min_success_percent: 66, url_expires_in: 3600 },
  );
  assert.deepEqual(buildWaitConditionCreate('a:b.c', { stack: 'web', timeout: '1', maxFailures: '0' }), {
    name: 'a:b.c',
    timeout: 1,
    max_failures: 0,
  });
});

test('buildWaitConditionCreate refuses bad values with a usage error naming the flag and value', () => {
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ['ready', { timeout: '0' }, /--timeout "0" is not a whole number of seconds from 1 to 43200/],
    ['ready', { timeout: '43201' }, /--timeout "43201"/],
    ['ready', { timeout: 'soon' }, /--timeout "soon"/],
    ['ready', { timeout: '10', count: '0' }, /--count "0" is not a whole number from 1 to 1000/],
    ['ready', { timeout: '10', count: '2.5' }, /--count "2.5"/],
    ['ready', { timeout: '10', maxFailures: '-1' }, /--max-failures "-1" is not a whole number from 0 to 1000/],
    ['ready', { timeout: '10', minSuccessPercent: '101' }, /--min-success-percent "101" is not a whole number from 0 to 100/],
    ['ready', { timeout: '10', urlExpiresIn: '0' }, /--url-expires-in "0"/],
    ['a/b', { timeout: '10' }, /wait condition name "a\/b" is not valid/],
    ['', { timeout: '10' }, /wait condition name "" is not valid/],
  ];
  for (const [name, flags, message] of cases) {
    assert.throws(
      () => buildWaitConditionCreate(name, { stack: 'web', timeout: '10', ...flags }),
      (error: unknown) => error instanceof ExitError && error.exitCode === EXIT.USAGE && message.test(error.message),
      `${name} ${JSON.stringify(flags)}`,
    );
  }
});

test('progress and finish texts read "2/3 received, 41 s elapsed"', () => {
  assert.equal(conditionProgressText(2, 3, 41_999), '2/3 received, 41 s elapsed');
  assert.equal(conditionProgressText(0, 1, 0), '0/1 received, 0 s elapsed');
  assert.equal(conditionFinishText({ received: 3, count: 3, status: 'COMPLETE' }, 5_200), '3/3 received, COMPLETE after 5 s');
});

test('exit mapping: COMPLETE 0, FAILED 1 with the reason, our own timeout 2', () => {
  const target = { stack: 'web', name: 'ready', timeoutSeconds: 30 };
  assert.equal(
    conditionWaitExitError(target, { outcome: 'COMPLETE', waitCondition: condition({ status: 'COMPLETE' }), elapsedMs: 1 }),
    undefined,
  );
  const failed = conditionWaitExitError(target, {
    outcome: 'FAILED',
    waitCondition: condition({ status: 'FAILED', status_reason: 'disk full' }),
    elapsedMs: 1,
  });
  assert.equal(failed?.exitCode, EXIT.FAILED);
  assert.equal(failed.message, 'wait condition ready FAILED: disk full');
  assert.match(failed.hint ?? '', /hearth waitcondition show ready --stack web/);
  const timedOut = conditionWaitExitError(target, { outcome: 'TIMEOUT', waitCondition: condition({ received: 1 }), elapsedMs: 30_000 });
  assert.equal(timedOut?.exitCode, EXIT.TIMEOUT);
  assert.equal(timedOut.message, 'wait condition ready is still IN_PROGRESS after 30 s (--timeout): 1/3 received');
  const unanswered = conditionWaitExitError(target, { outcome: 'TIMEOUT', waitCondition: undefined, elapsedMs: 30_000 });
  assert.equal(unanswered?.exitCode, EXIT.TIMEOUT);
  assert.equal(unanswered.message, 'hearth-server did not answer about wait condition ready within 30 s (--timeout)');
  assert.match(unanswered.hint ?? '', /accepted the connection but sent no reply/);
});

test('while nothing has been fetched the progress line says so, with the time elapsed', () => {
  assert.equal(conditionFetchingText('ready', 3_999), 'wait condition ready: fetching, 3 s elapsed');
});

test('the human view shows the counts, the signals and every handle form', () => {
  const text = formatCondition(
    condition({
      received: 1,
      successes: 1,
      signals: [{ id: 'n1', status: 'SUCCESS', reason: null, data: 'up', time: '2030-01-01T00:01:00Z' }],
    }),
  );
  assert.match(text, /^received: +1\/3$/m);
  assert.match(text, /^ {2}ID +STATUS +TIME +REASON +DATA$/m);
  assert.match(text, /^ {2}n1 +SUCCESS +2030-01-01T00:01:00Z +- +up$/m);
  for (const key of ['cfn_url', 'endpoint', 'token', 'curl_cli', 'signal_url']) assert.match(text, new RegExp(`^ {2}${key}: +\\S`, 'm'));
  assert.equal(formatConditionData({ n1: 'up', n2: { port: 80 } }), 'n1: up\nn2: {"port":80}\n');
});

test('waitcondition create sends the body to the stack and prints the handle; --json prints {wait_condition}', async () => {
  const created = condition();
  const human = await runFake(['waitcondition', 'create', 'ready', '--stack', 'web', '--timeout', '600', '--count', '3'], {
    createWaitCondition: async () => created,
  });
  assert.equal(human.code, 0, human.stderr);
  assert.deepEqual(human.calls, [['createWaitCondition', ['web', { name: 'ready', timeout: 600, count: 3 }]]]);
  assert.match(human.stdout, /^ {2}token: +wc-token$/m);
  const json = await runFake(['waitcondition', 'create', 'ready', '--stack', 'web', '--timeout', '600', '--json'], {
    createWaitCondition: async () => created,
  });
  assert.deepEqual(JSON.parse(json.stdout), { wait_condition: created });
});

test('bad or missing flags exit 64 before any client call', async () => {
  for (const argv of [
    ['waitcondition', 'create', 'ready', '--timeout', '10'],
    ['waitcondition', 'create', 'ready', '--stack', 'web'],
    ['waitcondition', 'create', 'ready', '--stack', 'web', '--timeout', '10', '--count', 'many'],
    ['waitcondition', 'wait', 'ready'],
    ['waitcondition', 'wait', 'ready', '--stack', 'web', '--timeout', '0'],
    ['waitcondition', 'show', 'ready'],
    ['waitcondition', 'list'],
    ['waitcondition', 'delete', 'ready'],
  ]) {
    const result = await runFake(argv, { createWaitCondition: async () => assert.fail('no call expected') });
    assert.equal(result.code, EXIT.USAGE, `${argv.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, /^hearth: .*\(ERR_USAGE\)$/m, argv.join(' '));
    assert.deepEqual(result.calls, []);
  }
});

/** A fake pollWaitCondition answering `states` in turn (each new state modified, then 304s). */
function polls(states: WaitCondition[]): (stack: string, name: string, request?: { etag?: string }) => Promise<WaitConditionPoll> {
  let next = 0;
  return async (_stack, _name, request = {}) => {
    if (request.etag !== undefined && next >= states.length) return { modified: false, etag: request.etag };
    const state = states[Math.min(next, states.length - 1)];
    assert.ok(state);
    next++;
    return { modified: true, etag: `"v${next}"`, waitCondition: state };
  };
}

test('waitcondition wait exits 0 on COMPLETE with the data on stdout and progress on stderr', async () => {
  const done = condition({ status: 'COMPLETE', received: 3, successes: 3, data: { n1: 'a', n2: 'b', n3: 'c' } });
  const human = await runFake(['waitcondition', 'wait', 'ready', '--stack', 'web'], {
    pollWaitCondition: polls([condition({ received: 2 }), done]),
  });
  assert.equal(human.code, 0, human.stderr);
  assert.equal(human.stdout, 'n1: a\nn2: b\nn3: c\n');
  assert.match(human.stderr, /^2\/3 received, 0 s elapsed$/m);
  assert.match(human.stderr, /^3\/3 received, COMPLETE after \d+ s$/m);

  const json = await runFake(['waitcondition', 'wait', 'ready', '--stack', 'web', '--json'], { pollWaitCondition: polls([done]) });
  assert.equal(json.code, 0);
  assert.deepEqual(JSON.parse(json.stdout), { wait_condition: done });
});

test('waitcondition wait exits 1 on FAILED, printing the status reason', async () => {
  const failed = condition({ status: 'FAILED', status_reason: 'node n2: disk full', received: 1, failures: 1 });
  const result = await runFake(['waitcondition', 'wait', 'ready', '--stack', 'web'], { pollWaitCondition: polls([failed]) });
  assert.equal(result.code, EXIT.FAILED);
  assert.match(result.stderr, /^hearth: wait condition ready FAILED: node n2: disk full$/m);
});

test('waitcondition wait exits 2 when its own --timeout passes', async () => {
  const result = await runFake(['waitcondition', 'wait', 'ready', '--stack', 'web', '--timeout', '1'], {
    pollWaitCondition: async (_stack: string, _name: string, request: { etag?: string; wait?: number } = {}) => {
      if (request.etag === undefined) return { modified: true, etag: '"v1"', waitCondition: condition({ received: 1 }) };
      await new Promise((resolve) => setTimeout(resolve, (request.wait ?? 0) * 1000));
      return { modified: false, etag: request.etag };
    },
  });
  assert.equal(result.code, EXIT.TIMEOUT, result.stderr);
  assert.match(result.stderr, /still IN_PROGRESS after 1 s \(--timeout\): 1\/3 received/);
});

test('list, show and delete call the stack-scoped methods', async () => {
  const wc = condition({ received: 2 });
  const list = await runFake(['waitcondition', 'list', '--stack', 'web'], { listWaitConditions: async () => [wc] });
  assert.match(list.stdout, /^NAME +STATUS +RECEIVED +FAILURES +DEADLINE\nready +IN_PROGRESS +2\/3 +0 +2030-/);
  const show = await runFake(['waitcondition', 'show', 'ready', '--stack', 'web', '--json'], { getWaitCondition: async () => wc });
  assert.deepEqual(show.calls, [['getWaitCondition', ['web', 'ready']]]);
  assert.deepEqual(JSON.parse(show.stdout), { wait_condition: wc });
  const deleted = await runFake(['waitcondition', 'delete', 'ready', '--stack', 'web', '--json'], {
    deleteWaitCondition: async () => undefined,
  });
  assert.deepEqual(deleted.calls, [['deleteWaitCondition', ['web', 'ready']]]);
  assert.deepEqual(JSON.parse(deleted.stdout), { deleted: true, stack: 'web', name: 'ready' });
});

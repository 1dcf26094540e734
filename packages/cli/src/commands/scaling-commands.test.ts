import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ADJUSTMENT_TYPES as PROTOCOL_ADJUSTMENT_TYPES,
  MAX_SCALING_COOLDOWN as PROTOCOL_COOLDOWN,
  MAX_SCALING_GROUP_SIZE as PROTOCOL_SIZE,
} from '@hearth/protocol';
import { createClient } from '@hearth/client';
import { startServer, type TestServer } from '../../../../test/helpers/server.ts';
import { describeError } from '../error-report.ts';
import type { CliIo } from '../io.ts';
import { buildProgram } from '../program.ts';
import { ADJUSTMENT_TYPES, MAX_SCALING_COOLDOWN, MAX_SCALING_GROUP_SIZE } from './scaling-client.ts';
import { buildScalingGroupCreate, buildScalingGroupUpdate } from './scaling-group.ts';
import { buildScalingPolicyCreate, signalPayload } from './scaling-policy.ts';

let server: TestServer;
before(async () => {
  server = await startServer();
  await createClient({ url: server.url, token: server.token }).createStack({ stack_name: 'web' });
});
after(() => server.close());

/** Runs `hearth` in-process; returns exit code and output. */
async function hearth(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = { code: 0, stdout: '', stderr: '' };
  const io: CliIo = {
    stdout: { write: (text) => void (out.stdout += text) },
    stderr: { write: (text) => void (out.stderr += text) },
    env: { HEARTH_TOKEN: server.token, HEARTH_URL: server.url },
    readTextFile: async () => '',
    now: () => Date.now(),
  };
  const program = buildProgram({ io, createClient });
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (error) {
    const report = describeError(error, { url: server.url });
    out.code = report.exitCode;
    for (const line of report.lines) out.stderr += `${line}\n`;
  }
  return out;
}

test('the copied protocol values equal the protocol', () => {
  assert.deepEqual(ADJUSTMENT_TYPES, PROTOCOL_ADJUSTMENT_TYPES);
  assert.equal(MAX_SCALING_GROUP_SIZE, PROTOCOL_SIZE);
  assert.equal(MAX_SCALING_COOLDOWN, PROTOCOL_COOLDOWN);
});

test('flags become bodies; bad flags are usage errors naming the flag and value', () => {
  assert.deepEqual(
    buildScalingGroupCreate('workers', {
      stack: 'web',
      minSize: '1',
      maxSize: '3',
      cooldown: '0',
      actuatorUrl: 'http://127.0.0.1:1/x',
      actuatorSecret: 'sixteen-chars-secret',
      bootstrapTransport: 'poll_server_heat',
    }),
    {
      name: 'workers',
      min_size: 1,
      max_size: 3,
      cooldown: 0,
      actuator: { url: 'http://127.0.0.1:1/x', secret: 'sixteen-chars-secret' },
      member_bootstrap: { software_config_transport: 'POLL_SERVER_HEAT' },
    },
  );
  const base = { stack: 'web', minSize: '1', maxSize: '3', actuatorUrl: 'http://h/x' };
  assert.throws(() => buildScalingGroupCreate('workers', { ...base, maxSize: '0' }), /--max-size 0 is smaller than --min-size 1/);
  assert.throws(() => buildScalingGroupCreate('a/b', base), /scaling group name "a\/b" is not valid/);
  assert.throws(() => buildScalingGroupCreate('w', { ...base, actuatorUrl: 'ftp://x' }), /--actuator-url/);
  // `http://` passed the old prefix check and met the server's schema wording (body/actuator/url must NOT have fewer than 8 characters).
  assert.throws(
    () => buildScalingGroupCreate('w', { ...base, actuatorUrl: 'http://' }),
    /--actuator-url "http:\/\/" is not an http\(s\) URL/,
  );
  assert.throws(
    () => buildScalingGroupCreate('w', { ...base, actuatorUrl: 'http://u:p@127.0.0.1:1/x' }),
    (error: Error & { hint?: string }) =>
      /must not carry a user or password/.test(error.message) && /--actuator-secret/.test(error.hint ?? ''),
  );
  assert.throws(() => buildScalingGroupUpdate({ stack: 'web' }), /nothing to update/);
  assert.deepEqual(buildScalingGroupUpdate({ stack: 'web', desiredCapacity: '2' }), { desired_capacity: 2 });
  const policy = { stack: 'web', group: 'workers', adjustmentType: 'Change_In_Capacity', adjustment: '-2' };
  assert.deepEqual(buildScalingPolicyCreate('down', policy), {
    name: 'down',
    group: 'workers',
    adjustment_type: 'change_in_capacity',
    scaling_adjustment: -2,
  });
  assert.throws(() => buildScalingPolicyCreate('down', { ...policy, minStep: '1' }), /--min-step is allowed only with/);
  assert.throws(() => buildScalingPolicyCreate('down', { ...policy, adjustment: '1.5' }), /--adjustment "1.5" is not a whole number/);
  assert.throws(() => buildScalingPolicyCreate('down', { ...policy, adjustmentType: 'grow' }), /--adjustment-type "grow" is not one of/);
  assert.deepEqual(signalPayload('{"status":"firing"}'), { status: 'firing' });
  assert.equal(signalPayload('by hand'), 'by hand');
  assert.equal(signalPayload(undefined), undefined);
});

test('hearth scaling-group and scaling-policy against a real server', async () => {
  const created = await hearth([
    'scaling-group',
    'create',
    'workers',
    '--stack',
    'web',
    '--min-size',
    '1',
    '--max-size',
    '2',
    '--cooldown',
    '60',
    '--actuator-url',
    'http://127.0.0.1:9/hook',
  ]);
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /size: +0 member\(s\), desired 1 in \[1, 2\]/);
  assert.match(created.stdout, /actuator_secret: \S+ +\(shown once/);

  const policy = await hearth([
    '--json',
    'scaling-policy',
    'create',
    'up',
    '--stack',
    'web',
    '--group',
    'workers',
    '--adjustment-type',
    'change_in_capacity',
    '--adjustment',
    '1',
  ]);
  assert.equal(policy.code, 0, policy.stderr);
  assert.match(
    (JSON.parse(policy.stdout) as { scaling_policy: { alarm_url: string } }).scaling_policy.alarm_url,
    /\/v1\/signal\/arn%3Aopenstack/,
  );

  const signalled = await hearth(['scaling-policy', 'signal', 'up', '--stack', 'web', '--data', 'load is high']);
  assert.equal(signalled.code, 0, signalled.stderr);
  assert.match(signalled.stdout, /outcome: +adjusted/);
  assert.match(signalled.stdout, /capacity: +1 -> 2/);
  const again = await hearth(['scaling-policy', 'signal', 'up', '--stack', 'web']);
  assert.match(again.stdout, /outcome: +cooldown/);

  const listed = await hearth(['scaling-group', 'list', '--stack', 'web']);
  assert.match(listed.stdout, /workers +2 +0 +1-2/);
  const shown = await hearth(['scaling-policy', 'show', 'up', '--stack', 'web']);
  assert.match(shown.stdout, /last_signal: .* cooldown: /);
  await createClient({ url: server.url, token: server.token }).createServer({ name: 'vm1', id: 'vm-1' });
  const members = await hearth(['scaling-group', 'members', 'workers', '--stack', 'web', '--add', 'vm-1']);
  assert.match(members.stdout, /vm-1 +false/);
  const update = await hearth(['scaling-group', 'update', 'workers', '--stack', 'web', '--max-size', '1']);
  assert.match(update.stdout, /desired 1 in \[1, 1\]/);

  const refused = await hearth(['scaling-group', 'delete', 'workers', '--stack', 'web']);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /ERR_SCALING_GROUP_HAS_POLICIES/);
  const revoked = await hearth(['scaling-policy', 'revoke', 'up', '--stack', 'web']);
  assert.match(revoked.stdout, /alarm_url: +\(revoked/);
  assert.equal((await hearth(['scaling-policy', 'delete', 'up', '--stack', 'web'])).code, 0);
  assert.equal((await hearth(['scaling-group', 'delete', 'workers', '--stack', 'web'])).code, 0);
  const usage = await hearth([
    'scaling-group',
    'create',
    'x',
    '--stack',
    'web',
    '--min-size',
    '-1',
    '--max-size',
    '1',
    '--actuator-url',
    'http://h/',
  ]);
  assert.equal(usage.code, 64);
});

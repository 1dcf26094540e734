import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StepError } from '../context.ts';
import { fakeContext, recordingRunner } from '../testing.ts';
import { applyUsers } from './users.ts';

test('new users: useradd with uid, home, groups and the nologin shell (as AWS and the original)', async () => {
  const runner = recordingRunner((command) => (command.startsWith('getent') ? { exitCode: 2 } : undefined));
  await applyUsers(fakeContext(runner).context, { app: { uid: '600', homeDir: '/srv/app', groups: ['web', 'ops'] }, plain: {} });
  assert.deepEqual(
    runner.calls.map((call) => call.command),
    [
      'getent passwd app',
      'useradd app --uid 600 --home /srv/app --groups web,ops --shell /sbin/nologin',
      'getent passwd plain',
      'useradd plain --shell /sbin/nologin',
    ],
  );
});

test('existing users are updated with usermod (a re-run converges), or left alone with nothing to set', async () => {
  const runner = recordingRunner((command) =>
    command.startsWith('getent') ? { exitCode: 0, stdout: 'app:x:600:600::/srv/app:/sbin/nologin' } : undefined,
  );
  await applyUsers(fakeContext(runner).context, { app: { groups: ['web'] }, other: {} });
  assert.deepEqual(
    runner.calls.map((call) => call.command),
    ['getent passwd app', 'usermod --groups web app', 'getent passwd other'],
  );
});

test('a useradd failure names the user, the reason and the exit code', async () => {
  const runner = recordingRunner((command) => (command.startsWith('getent') ? { exitCode: 2 } : { exitCode: 6 }));
  await assert.rejects(applyUsers(fakeContext(runner).context, { app: { groups: ['nogroup-here'] } }), (error: Error) => {
    assert.ok(error instanceof StepError);
    assert.equal(
      error.message,
      'users: app: useradd app --groups nogroup-here --shell /sbin/nologin failed: group does not exist (exit code 6)',
    );
    return true;
  });
});

test('malformed users are refused before anything runs', async () => {
  const runner = recordingRunner();
  const { context } = fakeContext(runner);
  await assert.rejects(applyUsers(context, { app: { uid: 'abc' } }), /users: app: uid must be a number/);
  await assert.rejects(applyUsers(context, { app: { groups: 'web' } }), /users: app: groups must be a list of group names/);
  await assert.rejects(applyUsers(context, { app: { homeDir: 7 } }), /users: app: homeDir must be a path/);
  assert.deepEqual(runner.calls, []);
});

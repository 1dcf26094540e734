import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StepError } from '../context.ts';
import { fakeContext, recordingRunner } from '../testing.ts';
import { applyGroups } from './groups.ts';

test('new groups are made with groupadd [--gid N]; existing ones are left alone', async () => {
  const runner = recordingRunner((command) =>
    command === 'getent group staff'
      ? { exitCode: 0, stdout: 'staff:x:50:\n' }
      : command.startsWith('getent')
        ? { exitCode: 2 }
        : undefined,
  );
  const { context, lines } = fakeContext(runner);
  await applyGroups(context, { web: { gid: '45' }, staff: {}, ops: {}, num: { gid: 46 } });
  assert.deepEqual(
    runner.calls.map((call) => call.command),
    [
      'getent group web',
      'groupadd web --gid 45',
      'getent group staff',
      'getent group ops',
      'groupadd ops',
      'getent group num',
      'groupadd num --gid 46',
    ],
  );
  assert.deepEqual(
    lines.map((line) => `${line.msg as string} ${line.group as string}`),
    ['group created web', 'group exists staff', 'group created ops', 'group created num'],
  );
});

test('a groupadd failure names the group, the reason and the exit code', async () => {
  const runner = recordingRunner((command) => (command.startsWith('getent') ? { exitCode: 2 } : { exitCode: 4 }));
  await assert.rejects(applyGroups(fakeContext(runner).context, { web: { gid: 45 } }), (error: Error) => {
    assert.ok(error instanceof StepError);
    assert.equal(error.message, 'groups: web: groupadd web --gid 45 failed: GID not unique (exit code 4)');
    return true;
  });
});

test('a gid that is not a number is refused without running groupadd', async () => {
  const runner = recordingRunner();
  await assert.rejects(applyGroups(fakeContext(runner).context, { web: { gid: 'x; rm -rf /' } }), /groups: web: gid must be a number/);
  assert.deepEqual(runner.calls, []);
});

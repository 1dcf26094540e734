import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lookupUser, runAction } from './run-action.ts';

const root = process.getuid?.() === 0;
const nobody = lookupUser('nobody');

test(
  'runas switches the real and effective uid and gid and drops root’s groups; HOME and USER follow',
  { skip: !root || !nobody ? 'needs root and a nobody user' : false },
  async () => {
    const result = await runAction('echo "$(id -u) $(id -ru) $(id -g) $(id -rg) [$(id -G)] $USER $HOME"', 'nobody');
    assert.equal(result.failed, false, result.stderr);
    const { uid, gid, home } = nobody!;
    assert.equal(result.stdout.trim(), `${uid} ${uid} ${gid} ${gid} [${gid}] nobody ${home}`);
    const back = await runAction('python3 -c "import os; os.setuid(0)" 2>&1 || echo refused', 'nobody');
    assert.match(back.stdout, /refused|Operation not permitted/, 'the action cannot take root back');
  },
);

test('without runas the action runs as cfn-hup’s user; a failing action and an unknown user are results, not throws', async () => {
  const same = await runAction('id -u; exit 3', undefined);
  assert.equal(same.stdout.trim(), String(process.getuid?.()));
  assert.deepEqual([same.exitCode, same.failed], [3, true]);
  const unknown = await runAction('true', 'no-such-user-hearth');
  assert.equal(unknown.failed, true);
  assert.match(unknown.stderr, /no such user 'no-such-user-hearth'/);
});

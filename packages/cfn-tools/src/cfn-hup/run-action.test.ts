import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
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

/** Whether `pid` is still a live process (not a zombie). */
function alive(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

async function until(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate() && Date.now() < deadline) await sleep(50);
  return predicate();
}

test('a hung action is stopped after timeoutMs with every process below it, and says so', async () => {
  // the shell waits on a child, so the whole tree must be stopped, not just /bin/sh
  const result = await runAction('echo $$; sleep 100000 & echo $!; wait', undefined, { timeoutMs: 500 });
  const [shell, sleeper] = result.stdout.trim().split('\n').map(Number);
  assert.ok(result.durationMs < 4000, `took ${result.durationMs} ms`);
  assert.deepEqual([result.timedOut, result.aborted, result.failed, result.signal], [true, false, true, 'SIGTERM']);
  assert.match(result.stderr, /stopped after the 1 s timeout\n$/);
  assert.ok(await until(() => !alive(shell!) && !alive(sleeper!), 3000), 'the shell and its sleep are gone');
});

test('an aborted signal stops a running action; a quick action is not affected by a timeout', async () => {
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 300);
  const stopped = await runAction('sleep 100000', undefined, { signal: controller.signal, timeoutMs: 60_000 });
  assert.deepEqual([stopped.aborted, stopped.timedOut, stopped.failed], [true, false, true]);
  assert.match(stopped.stderr, /stopped: cfn-hup is shutting down/);
  const quick = await runAction('echo ok', undefined, { timeoutMs: 60_000 });
  assert.deepEqual([quick.stdout, quick.failed, quick.timedOut], ['ok\n', false, false]);
});

test('a background process holding stdout (a daemon the action started) does not keep the action waiting', async (t) => {
  const result = await runAction('sleep 30 & echo $!; echo started >&2', undefined, { outputGraceMs: 300 });
  const daemon = Number(result.stdout.trim());
  t.after(() => process.kill(daemon, 'SIGKILL'));
  assert.ok(result.durationMs < 5000, `took ${result.durationMs} ms: it waited for the background process`);
  assert.deepEqual([result.exitCode, result.failed, result.timedOut], [0, false, false]);
  assert.match(result.stderr, /^started\noutput after the action exited is not captured/);
  assert.ok(alive(daemon), 'the background process is left running, as the action meant');
});

test('a timed-out action resolves only once a process below it that ignores SIGTERM got its SIGKILL', async () => {
  // the subshell and its sleep ignore SIGTERM and keep stdout open after the shell died: without waiting for the
  // SIGKILL, a cfn-hup -f that exits right after the result would leave them running
  const result = await runAction("(trap '' TERM; echo $(exec sh -c 'echo $PPID'); sleep 100000)", undefined, {
    timeoutMs: 300,
    outputGraceMs: 100,
  });
  const subshell = Number(result.stdout.trim());
  assert.ok(subshell > 0, result.stdout);
  assert.equal(result.timedOut, true);
  // SIGKILL was sent before the result came (without the wait it comes 5 s early); the kernel may take a moment
  assert.ok(await until(() => !alive(subshell), 1000), 'the subshell that ignored SIGTERM is gone when the result comes');
});

test('a hung action whose setsid daemon escaped its tree still times out; the daemon is left running', async (t) => {
  // setsid -f: the daemon is re-parented to init, out of the action's tree, holding its stdout, as a hook's
  // `service x start` may leave one; the hung part is stopped and the result comes, the daemon stays
  const result = await runAction("setsid -f sh -c 'echo $$; exec sleep 100000'; sleep 100000", undefined, {
    timeoutMs: 500,
    outputGraceMs: 200,
  });
  const daemon = Number(result.stdout.trim());
  t.after(() => process.kill(daemon, 'SIGKILL'));
  assert.deepEqual([result.timedOut, result.failed], [true, true]);
  assert.ok(result.durationMs < 4000, `took ${result.durationMs} ms`);
  assert.ok(alive(daemon), 'the daemon the action started on purpose survives the timeout');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processRunner, StepError } from '../context.ts';
import { fakeContext, recordingRunner } from '../testing.ts';
import { applyCommands } from './commands.ts';

function tempRoot(t: { after: (fn: () => void) => void }): string {
  const root = mkdtempSync(join(tmpdir(), 'cfn-init-commands-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

test('commands run for real in order of name: shell strings, argv lists, cwd, env replacing the environment, test', async (t) => {
  const root = tempRoot(t);
  const { context } = fakeContext(processRunner());
  process.env.CFN_INIT_TEST_LEAK = 'leaked';
  t.after(() => delete process.env.CFN_INIT_TEST_LEAK);
  await applyCommands(context, {
    '20_list': { command: ['/bin/sh', '-c', 'echo "list $0" >> log', 'arg0'], cwd: root },
    '10_shell': { command: 'echo "shell $(pwd)" >> log', cwd: root },
    '30_env': { command: 'echo "env ${GREETING}-${CFN_INIT_TEST_LEAK:-none}" >> log', cwd: root, env: { GREETING: 'hi' } },
    '40_skipped': { command: 'echo skipped >> log', cwd: root, test: 'test -e nothing-here' },
    '50_tested': { command: 'echo tested >> log', cwd: root, test: 'test -e log' },
  });
  assert.equal(readFileSync(join(root, 'log'), 'utf8'), `shell ${root}\nlist arg0\nenv hi-none\ntested\n`);
  assert.deepEqual([...context.changes.commands], ['10_shell', '20_list', '30_env', '50_tested']);
});

test('a failing command stops the section with its name and exit code; ignoreErrors carries on', async (t) => {
  const root = tempRoot(t);
  const { context } = fakeContext(processRunner());
  await assert.rejects(
    applyCommands(context, { a: { command: 'echo boom >&2; exit 3' }, b: { command: `touch ${root}/b` } }),
    (error: Error) =>
      error instanceof StepError &&
      error.section === 'commands' &&
      error.key === 'a' &&
      error.exitCode === 3 &&
      /failed: boom \(exit code 3\)$/.test(error.message),
  );
  assert.throws(() => readFileSync(`${root}/b`));
  await applyCommands(context, { a: { command: 'exit 3', ignoreErrors: 'true' }, b: { command: `touch ${root}/b` } });
  assert.equal(readFileSync(`${root}/b`, 'utf8'), '');
});

test('waitAfterCompletion waits that many seconds; "forever" stops the run after that command', async () => {
  const runner = recordingRunner();
  const { context, slept } = fakeContext(runner);
  const outcome = await applyCommands(context, {
    a: { command: 'a', waitAfterCompletion: '2' },
    b: { command: 'b', waitAfterCompletion: 'forever' },
    c: { command: 'c' },
  });
  assert.deepEqual(slept, [2000]);
  assert.deepEqual(outcome, { stop: true });
  assert.deepEqual(
    runner.calls.map((call) => call.command),
    ['a', 'b'],
  );
});

test('bad commands are refused with the name: no command, a missing cwd, a bad wait', async () => {
  const runner = recordingRunner();
  const { context } = fakeContext(runner);
  await assert.rejects(applyCommands(context, { x: { cwd: '/' } }), /commands: x: the 'command' property is missing/);
  await assert.rejects(
    applyCommands(context, { x: { command: 'true', cwd: '/no/such/dir' } }),
    /commands: x: cwd \/no\/such\/dir does not exist/,
  );
  await assert.rejects(applyCommands(context, { x: { command: [] } }), /command must be a string or a non-empty list/);
  await assert.rejects(
    applyCommands(context, { x: { command: 'true', waitAfterCompletion: 'soon' } }),
    /waitAfterCompletion must be seconds or "forever"/,
  );
  assert.deepEqual(runner.calls, []);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExitError, httpRequest } from '@hearth/agent-kit';
import type { Collector, CollectOutcome } from './collectors/types.ts';
import { runCollectConfig, type DaemonDeps } from './daemon.ts';
import type { CommandResult } from './run-command.ts';
import { formatStatus, readStatus } from './status.ts';
import { optionsFor, recordingLogger, tempDir } from './test-support/fixtures.ts';

/** A collector that answers from a script of outcomes (the last one repeats). */
function scripted(name: string, outcomes: Array<CollectOutcome | Error>): Collector {
  let call = 0;
  return {
    name,
    async collect() {
      const next = outcomes[Math.min(call++, outcomes.length - 1)]!;
      if (next instanceof Error) throw next;
      return next;
    },
  };
}

const data = (key: string, content: unknown): CollectOutcome => ({ kind: 'data', outputs: [[key, content]] });

/** Deps with a recorded command (exit codes scripted), recorded sleeps, and a stop after `passes` sleeps. */
function harness(exitCodes: number[] = [0], passes = Infinity) {
  const commands: string[][] = [];
  const sleeps: number[] = [];
  const stop = new AbortController();
  const log = recordingLogger();
  const deps: DaemonDeps = {
    http: httpRequest,
    log,
    stop: stop.signal,
    async runCommand(command, files): Promise<CommandResult> {
      commands.push([...files]);
      const exitCode = exitCodes[Math.min(commands.length - 1, exitCodes.length - 1)]!;
      return { command, exitCode, signal: null, startedAt: new Date().toISOString(), durationMs: 1 };
    },
    async sleep(ms) {
      sleeps.push(ms / 1000);
      if (sleeps.length >= passes) stop.abort();
    },
  };
  return { deps, commands, sleeps, log, stop };
}

test('one-time: stores, runs the command with OS_CONFIG_FILES in collection order, commits .last on success', async () => {
  const options = optionsFor(['--one-time', '-c', 'true', 'local']);
  const { deps, commands } = harness();
  const collectors = [
    scripted('a', [data('a', { x: 1 })]),
    scripted('b', [
      {
        kind: 'data',
        outputs: [
          ['b', 1],
          ['c', 2],
        ],
      },
    ]),
  ];
  assert.deepEqual(await runCollectConfig(options, { ...deps, collectors }), { exitCode: 0, reexec: false });
  const paths = ['a', 'b', 'c'].map((key) => join(options.cachedir, `${key}.json`));
  assert.deepEqual(commands, [paths]);
  assert.equal(readFileSync(join(options.cachedir, 'os_config_files.json'), 'utf8'), JSON.stringify(paths).replaceAll('","', '", "'));
  for (const path of paths) assert.equal(readFileSync(`${path}.last`, 'utf8'), readFileSync(path, 'utf8'));
  assert.ok(existsSync(join(options.backupCachedir, 'a.json')), 'the cache is backed up after a change');

  const again = harness();
  assert.equal((await runCollectConfig(options, { ...again.deps, collectors })).exitCode, 0);
  assert.deepEqual(again.commands, [], 'nothing changed: the command does not run');
  const forced = harness();
  await runCollectConfig({ ...options, force: true }, { ...forced.deps, collectors });
  assert.equal(forced.commands.length, 1, '--force runs it anyway');
});

test('a failing command: its exit code is returned, nothing is committed, and the next run retries', async () => {
  const options = optionsFor(['--one-time', '-c', 'false']);
  const collectors = [scripted('a', [data('a', { v: 1 })])];
  const failing = harness([3]);
  assert.equal((await runCollectConfig(options, { ...failing.deps, collectors })).exitCode, 3);
  assert.equal(existsSync(join(options.cachedir, 'a.json.last')), false);
  assert.ok(failing.log.lines.some((line) => line.level === 'error' && line.message === 'Command failed, will not cache new data.'));
  const retry = harness([0]);
  assert.equal((await runCollectConfig(options, { ...retry.deps, collectors })).exitCode, 0);
  assert.equal(retry.commands.length, 1);
  assert.ok(existsSync(join(options.cachedir, 'a.json.last')));
});

test('without a command (or with --print): prints the JSON map as Python does, stores nothing', async () => {
  const options = optionsFor(['--print', '-c', 'true']);
  let printed = '';
  const stdout = { write: (text: string) => ((printed += text), true) } as unknown as NodeJS.WritableStream;
  const { deps, commands } = harness();
  const collectors = [scripted('a', [data('a', { é: [1] })]), scripted('n', [{ kind: 'not-configured', reason: 'x' }])];
  await runCollectConfig(options, { ...deps, collectors, stdout });
  assert.equal(printed, '{\n "a": {\n  "\\u00e9": [\n   1\n  ]\n }\n}\n');
  assert.deepEqual(commands, []);
  assert.equal(existsSync(options.cachedir), false);
});

test('daemon backoff doubles up to polling_interval and returns to the minimum after a change is applied (fix)', async () => {
  const options = optionsFor(['-c', 'true', '--min-polling-interval', '1', '-i', '8']);
  const { deps, sleeps, commands } = harness([0], 8);
  const same = data('a', 1);
  const collectors = [scripted('a', [same, same, same, same, same, data('a', 2), same])];
  await runCollectConfig(options, { ...deps, collectors });
  // pass 1 applies a change (sleep 1), 2..5 unchanged (2, 4, 8, 8), pass 6 applies 2 (back to 1), pass 7 applies 1 again.
  assert.deepEqual(sleeps, [1, 2, 4, 8, 8, 1, 1, 2]);
  assert.equal(commands.length, 3);
});

test('a source that fails keeps its last good data in OS_CONFIG_FILES (fix); an unexpected error is logged, not fatal (fix)', async () => {
  const options = optionsFor(['-c', 'true']);
  const { deps, commands, log } = harness([0], 3);
  const flaky = scripted('flaky', [data('flaky', { good: true }), { kind: 'unavailable', reason: 'down' }, new Error('boom')]);
  const changing = scripted('changing', [data('changing', 1), data('changing', 2), data('changing', 3)]);
  await runCollectConfig(options, { ...deps, collectors: [flaky, changing] });
  const expected = [join(options.cachedir, 'flaky.json'), join(options.cachedir, 'changing.json')];
  assert.deepEqual(commands, [expected, expected, expected]);
  assert.ok(log.lines.some((line) => line.level === 'warn' && line.message === 'Source [flaky] Unavailable.'));
  assert.ok(log.lines.some((line) => line.level === 'error' && /Source \[flaky\] failed unexpectedly/.test(line.message)));

  const status = readStatus(options.statusFile);
  assert.ok(status);
  assert.equal(status.mode, 'daemon');
  assert.deepEqual(
    status.collectors.map((c) => [c.name, c.outcome, c.keys]),
    [
      ['flaky', 'error', ['flaky']],
      ['changing', 'data', ['changing']],
    ],
  );
  assert.equal(status.lastCommand?.exitCode, 0);
  assert.deepEqual(status.lastCommand?.files, expected);
  assert.match(formatStatus(status), /flaky +\S+ error: boom \[flaky\]/);
});

test('a damaged .last is named in the log and the command runs again; a .last that cannot be written does not stop the daemon', async () => {
  const options = optionsFor(['-c', 'true']);
  const collectors = [scripted('a', [data('a', { v: 1 })])];
  const first = harness([0]);
  await runCollectConfig({ ...options, oneTime: true }, { ...first.deps, collectors });
  const last = join(options.cachedir, 'a.json.last');
  writeFileSync(last, '{\n "v":'); // cut mid-write by a power loss on a disk that lost its cache

  const truncated = harness([0]);
  assert.equal((await runCollectConfig({ ...options, oneTime: true }, { ...truncated.deps, collectors })).exitCode, 0);
  assert.equal(truncated.commands.length, 1, 'whether the command consumed it cannot be known: it runs again');
  const named = truncated.log.lines.filter((line) => line.level === 'warn' && line.message.includes(last));
  assert.equal(named.length, 1, JSON.stringify(truncated.log.lines));
  assert.match(named[0]!.message, /cannot be read .*counting a as changed/);
  assert.deepEqual(JSON.parse(readFileSync(last, 'utf8')), { v: 1 }, 'committed again whole');

  rmSync(last);
  mkdirSync(join(last, 'in-the-way'), { recursive: true });
  const blocked = harness([0], 2);
  assert.deepEqual(await runCollectConfig(options, { ...blocked.deps, collectors }), { exitCode: 0, reexec: false });
  assert.equal(blocked.commands.length, 2, 'not recorded as consumed: each pass runs it again, as after a failed command');
  const commitErrors = blocked.log.lines.filter(
    (line) => line.level === 'error' && /could not be recorded in the cache/.test(line.message),
  );
  assert.equal(commitErrors.length, 2);
  assert.match(String(commitErrors[0]!.fields?.error), new RegExp(`cannot write ${last}: `));
});

test('a changed config file after a command run asks for a re-exec', async () => {
  const root = tempDir();
  mkdirSync(join(root, 'etc'));
  const conf = join(root, 'etc', 'os-collect-config.conf');
  writeFileSync(conf, '[DEFAULT]\ncommand = true\n');
  const options = optionsFor([], root);
  assert.deepEqual(options.configFiles, [conf]);
  const { deps } = harness();
  const collectors = [scripted('a', [data('a', 1)])];
  const rewrite: DaemonDeps['runCommand'] = async (command, files) => {
    writeFileSync(conf, '[DEFAULT]\ncommand = true\npolling_interval = 5\n');
    return deps.runCommand(command, files);
  };
  assert.deepEqual(await runCollectConfig(options, { ...deps, collectors, runCommand: rewrite }), { exitCode: 0, reexec: true });
});

test('zaqar: refused with a clear message when named or configured; left out of the default list otherwise', async () => {
  const { deps } = harness();
  const refused = (argv: string[]) =>
    assert.rejects(
      runCollectConfig(optionsFor(argv), { ...deps, collectors: [] }),
      (error: unknown) => error instanceof ExitError && error.exitCode === 1 && /zaqar collector is not supported/.test(error.message),
    );
  await refused(['--print', 'zaqar']);
  await refused(['--print', '--zaqar-queue-id', 'q']);
  let printed = '';
  const stdout = { write: (text: string) => ((printed += text), true) } as unknown as NodeJS.WritableStream;
  await runCollectConfig(optionsFor(['--print']), { ...deps, collectors: [], stdout });
  assert.equal(printed, '{}\n');
});

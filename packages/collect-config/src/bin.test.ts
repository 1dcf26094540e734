// The command as a process: flags that exit early, exit codes, and --status of a one-time run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './test-support/fixtures.ts';

const BIN = new URL('../bin/os-collect-config.js', import.meta.url).pathname;

function run(args: string[], root: string) {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, HEARTH_ROOT: root };
  return spawnSync(process.execPath, [BIN, ...args], { env, encoding: 'utf8', timeout: 30_000 });
}

test('--help, --version and --print-cachedir exit 0; bad flags and collectors exit non-zero with a message', () => {
  const root = tempDir();
  const help = run(['--help'], root);
  assert.equal(help.status, 0);
  assert.match(help.stdout, /usage: os-collect-config/);
  assert.match(help.stdout, /--cfn-metadata-url/);
  assert.equal(run(['--version'], root).status, 0);
  const cachedir = run(['--print-cachedir', '--cachedir', '/x/y'], root);
  assert.deepEqual([cachedir.status, cachedir.stdout], [0, '/x/y\n']);
  const bad = run(['--bogus'], root);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /bogus/);
  const unknown = run(['--print', 'nosuch'], root);
  assert.equal(unknown.status, 1);
  assert.match(unknown.stderr, /unknown collectors \["nosuch"\]/);
  const zaqar = run(['--print', 'zaqar'], root);
  assert.equal(zaqar.status, 1);
  assert.match(zaqar.stderr, /zaqar collector is not supported/);
});

test('a refused flag or value names the command once, as the prefix of its message', () => {
  const root = tempDir();
  const cases: Array<[string[], number, RegExp]> = [
    [['--bogus'], 2, /^os-collect-config: Unknown option '--bogus'/],
    [['--config-file', join(root, 'missing.conf')], 1, /^os-collect-config: config file not found: /],
    [['--polling-interval', 'abc'], 1, /^os-collect-config: --polling-interval must be a number, got 'abc'/],
    [['--print', 'zaqar'], 1, /^os-collect-config: the zaqar collector is not supported/],
  ];
  for (const [args, status, message] of cases) {
    const result = run(args, root);
    assert.equal(result.status, status, args.join(' '));
    assert.match(result.stderr, message);
    assert.equal(result.stderr.match(/os-collect-config:/g)?.length, 1, result.stderr);
  }
});

test('--one-time returns the command exit code; --status --json reports the last poll and command', () => {
  const root = tempDir();
  const data = join(root, 'data');
  mkdirSync(data, { mode: 0o755 });
  writeFileSync(join(data, 'cfg'), '{"a": 1}');
  const failing = run(['--one-time', '-c', 'exit 4', '--local-path', data, 'local'], root);
  assert.equal(failing.status, 4, failing.stderr);
  const status = run(['--status', '--json'], root);
  assert.equal(status.status, 0, status.stderr);
  const parsed = JSON.parse(status.stdout);
  assert.equal(parsed.running, false);
  assert.equal(parsed.lastCommand.exitCode, 4);
  assert.deepEqual(
    parsed.collectors.map((c: { name: string; outcome: string }) => [c.name, c.outcome]),
    [['local', 'data']],
  );
  const text = run(['--status'], root);
  assert.match(text.stdout, /last command: exit 4/);
  const ok = run(['--one-time', '-c', 'test -n "$OS_CONFIG_FILES"', '--local-path', data, 'local'], root);
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal(run(['--status'], tempDir()).status, 3, 'no status yet');
});

test('the re-exec log line (SIGHUP) shows credential flags as ***, never their values', async () => {
  const root = tempDir();
  const data = join(root, 'data');
  mkdirSync(data, { mode: 0o755 });
  writeFileSync(join(data, 'cfg'), '{"a": 1}');
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, HEARTH_ROOT: root };
  const args = ['-c', 'true', '--local-path', data, '--hearth-secret-access-key', 'S3CR3T-1', '--heat-password=S3CR3T-2', 'local'];
  const daemon = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'], timeout: 30_000 });
  let stderr = '';
  let ended = false;
  daemon.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  daemon.once('close', () => (ended = true));
  /** Resolves once the log holds `pattern`; rejects if the daemon ends first. */
  const seen = async (pattern: RegExp): Promise<void> => {
    while (!pattern.test(stderr)) {
      if (ended) throw new Error(`the daemon ended before logging ${pattern}:\n${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  try {
    await seen(/Sleeping/);
    daemon.kill('SIGHUP');
    await seen(/Re-executing/);
  } finally {
    daemon.kill('SIGTERM');
  }
  const line = stderr.split('\n').find((entry) => entry.includes('Re-executing'))!;
  assert.match(line, /--hearth-secret-access-key \*\*\* --heat-password=\*\*\* local/);
  assert.doesNotMatch(stderr, /S3CR3T/);
});

test('every flag the original lists in --help is accepted (the oslo.log ones and its underscore spellings included)', () => {
  const root = tempDir();
  const flags: string[][] = [
    ['--cfn-ca_certificate', '/ca.pem'],
    ['--keystone-cache_dir', '/k'],
    ['--keystone-cache_ttl', '5'],
    ['--zaqar-nouse-websockets'],
    ['--zaqar-nossl-certificate-validation'],
    ['--nodebug'],
    ['--use-syslog'],
    ['--nouse-syslog'],
    ['--use-journal'],
    ['--nouse-journal'],
    ['--use-json'],
    ['--nouse-json'],
    ['--watch-log-file'],
    ['--nowatch-log-file'],
    ['--log-config-append', '/dev/null'],
    ['--log-config', '/dev/null'],
    ['--log_config', '/dev/null'],
    ['--log-date-format', '%Y'],
    ['--syslog-log-facility', 'LOG_USER'],
    ['--logfile', join(root, 'occ.log')],
    ['--log-dir', root],
    ['--logdir', root],
  ];
  // One run: a refused flag is named in the message.
  const result = run([...flags.flat(), '--print-cachedir', '--cachedir', '/c'], root);
  assert.deepEqual([result.status, result.stdout], [0, '/c\n'], result.stderr);
});

test('--log-file and --log-dir get every line, also of a run that ends at once (--print)', () => {
  const root = tempDir();
  const missing = join(root, 'no-such-dir');
  const file = join(root, 'occ.log');
  const printed = run(['--print', '--log-file', file, '--local-path', missing, 'local'], root);
  assert.equal(printed.status, 0, printed.stderr);
  assert.equal(printed.stderr, '', 'the lines go to the file, not stderr');
  assert.match(readFileSync(file, 'utf8'), new RegExp(`"msg":"${missing} not found. Skipping"`));
  const logDir = join(root, 'logs');
  mkdirSync(logDir);
  assert.equal(run(['--print', '--log-dir', logDir, '--local-path', missing, 'local'], root).status, 0);
  assert.match(readFileSync(join(logDir, 'os-collect-config.log'), 'utf8'), /not found. Skipping/);
});

test('a --backup-cachedir that is a file stops the run (exit 1, as the original) and the file is kept', () => {
  const root = tempDir();
  const data = join(root, 'data');
  mkdirSync(data, { mode: 0o755 });
  writeFileSync(join(data, 'cfg'), '{"a": 1}');
  const file = join(root, 'notes.txt');
  writeFileSync(file, 'precious');
  const ran = join(root, 'ran');
  const result = run(['--one-time', '-c', `touch ${ran}`, '--backup-cachedir', file, '--local-path', data, 'local'], root);
  assert.equal(result.status, 1, result.stderr);
  assert.match(result.stderr, /backup_cachedir .*notes\.txt is not a directory/);
  assert.equal(readFileSync(file, 'utf8'), 'precious');
  assert.equal(existsSync(ran), false, 'the command does not run, as in the original');
});

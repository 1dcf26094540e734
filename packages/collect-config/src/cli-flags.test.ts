// The command line as oslo.config's argparse reads it: abbreviated long flags, values that start with `-`,
// and the secret values of abbreviated flags kept out of the log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExitError } from '@hearth/agent-kit';
import { flagTable, isHearthOnlyFlag } from './cli-flags.ts';
import { argvForLog, parseCommandLine, type CollectOptions } from './options.ts';

const env = (): NodeJS.ProcessEnv => ({ HEARTH_ROOT: mkdtempSync(join(tmpdir(), 'occ-flags-')) });

function run(argv: string[]): CollectOptions {
  const parsed = parseCommandLine(argv, env());
  assert.equal(parsed.action, 'run');
  return (parsed as { options: CollectOptions }).options;
}

function expectExit(argv: string[], code: number, message: string | RegExp): void {
  assert.throws(
    () => parseCommandLine(argv, env()),
    (error: unknown) =>
      error instanceof ExitError &&
      error.exitCode === code &&
      (typeof message === 'string' ? error.message.split('\n')[0] === message : message.test(error.message)),
    argv.join(' '),
  );
}

test('a long flag may be abbreviated to an unambiguous prefix, with either `--flag value` or `--flag=value`', () => {
  const options = run(['--polling-int', '5', '--cached=/x', '--one', '--ec2-t', '2.5', '--heat_l', '/a', '--deployment', 'k']);
  assert.equal(options.pollingInterval, 5);
  assert.equal(options.cachedir, '/x');
  assert.equal(options.oneTime, true);
  assert.equal(options.groups.ec2?.timeout, 2.5);
  assert.deepEqual(options.groups.heat_local?.path, ['/a']);
  assert.deepEqual(options.deploymentKeys, ['k']);
  assert.equal(run(['--one-time', '--noone']).oneTime, false);
  assert.equal(run(['--print-c']).printCachedir, true);
});

test('an exact flag wins over the longer flags it is a prefix of; an ambiguous prefix exits 2 naming the candidates', () => {
  const options = run(['--print']);
  assert.equal(options.printOnly, true);
  assert.equal(options.printCachedir, false);
  expectExit(['--p'], 2, 'ambiguous option: --p could match --polling-interval, --print, --print-cachedir');
  expectExit(['--pri'], 2, 'ambiguous option: --pri could match --print, --print-cachedir');
  expectExit(['--conf', '/dev/null'], 2, 'ambiguous option: --conf could match --config-dir, --config-file');
  expectExit(['--nopr'], 2, 'ambiguous option: --nopr could match --noprint, --noprint-cachedir');
  expectExit(['--print-ca=1'], 2, /--print-cachedir/);
});

test("a prefix means what it means to the original: hearth's added flags do not make it ambiguous", () => {
  // The original has --log-file and --version; hearth adds --log-format and --verbose.
  assert.equal(run(['--log-f', '/var/log/occ.log']).logFile, '/var/log/occ.log');
  assert.deepEqual(parseCommandLine(['--ver'], env()), { action: 'version' });
  // No original flag starts so: hearth's own are matched.
  assert.equal(run(['--status-f', '/s.json']).statusFile, '/s.json');
  assert.deepEqual(run(['--heat-local', '/b']).groups.heat_local?.path, ['/b']);
  expectExit(['--stat'], 2, 'ambiguous option: --stat could match --status, --status-file');
});

test('a value may start with `-` when argparse takes it as one: a negative number, `-` alone, or text with a space', () => {
  expectExit(['--polling-interval', '-3'], 1, '--polling-interval must not be negative, got -3');
  expectExit(['-i', '-3'], 1, '--polling-interval must not be negative, got -3');
  expectExit(['--splay', '-.5'], 1, '--splay must not be negative, got -0.5');
  assert.equal(run(['--command', '-']).command, '-');
  assert.equal(run(['-c', '-x y']).command, '-x y');
  assert.equal(run(['-i5']).pollingInterval, 5);
  expectExit(['--command', '--one-time'], 2, 'argument --command: expected one argument');
  expectExit(['--cachedir'], 2, 'argument --cachedir: expected one argument');
  assert.deepEqual(run(['--one-time', '--', 'local']).collectors, ['local']);
});

test('a timeout of 0 or less is refused for an enabled collector, and only for one', () => {
  expectExit(['--ec2-timeout', '0', 'ec2'], 1, '[ec2] timeout (--ec2-timeout) must be greater than 0 seconds, got 0');
  expectExit(['--request-t=-1', 'request', 'local'], 1, '[request] timeout (--request-timeout) must be greater than 0 seconds, got -1');
  expectExit(['--cfn-timeout', '0'], 1, /\[cfn\] timeout/);
  const root = mkdtempSync(join(tmpdir(), 'occ-flags-'));
  const conf = join(root, 'os-collect-config.conf');
  writeFileSync(conf, '[DEFAULT]\ncollectors = heat\n[heat]\ntimeout = 0\n');
  assert.throws(() => parseCommandLine(['--config-file', conf], { HEARTH_ROOT: root }), /\[heat\] timeout .* got 0/);
  assert.deepEqual(run(['--ec2-timeout', '0', 'local']).collectors, ['local']);
});

test('the logged argv hides the value of an abbreviated credential flag', () => {
  const logged = argvForLog(['--heat-pass', 'PW1', '--cfn-secret=PW2', '--hearth-sec', 'PW3', '--', 'local', '--heat-password=PW4', 'x']);
  assert.deepEqual(logged, ['--heat-pass', '***', '--cfn-secret=***', '--hearth-sec', '***', '--', 'local', '--heat-password=***', 'x']);
});

const DEBIAN = '/usr/bin/os-collect-config';

test("the original's flags are exactly ours less hearth's additions", { skip: !existsSync(DEBIAN) && `${DEBIAN} not installed` }, () => {
  // --help reads no network; HOME and --config-file keep it away from any local config.
  const help = spawnSync(DEBIAN, ['--config-file', '/dev/null', '--help'], {
    env: { PATH: '/usr/bin:/bin', HOME: mkdtempSync(join(tmpdir(), 'occ-home-')) },
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(help.status, 0, help.stderr);
  // Each option line: `  -h, --help`, `  --log-dir LOG_DIR, --logdir LOG_DIR` then two spaces and the help text.
  const optionLines = help.stdout.split('\n').filter((line) => /^ {2}-/.test(line));
  const original = new Set(
    optionLines.flatMap((line) => [...(line.trim().split(/ {2,}/)[0] ?? '').matchAll(/--([\w-]+)/g)].map((m) => m[1])),
  );
  assert.ok(original.size > 60, [...original].join(' '));
  const ours = Object.keys(flagTable()).filter((flag) => !isHearthOnlyFlag(flag));
  assert.deepEqual([...ours].sort(), [...original].sort());
});

test('text with a space is a value unless argparse still reads it as a flag', () => {
  assert.equal(run(['--command', '--x y']).command, '--x y');
  // -c with an attached `md x`, so --command has no value of its own.
  expectExit(['--command', '-cmd x'], 2, 'argument --command: expected one argument');
  expectExit(['--cachedir', '--command=a b'], 2, 'argument --cachedir: expected one argument');
});

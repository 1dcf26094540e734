import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExitError } from '@hearth/agent-kit';
import { parseOptions } from './options.ts';

const usage = (argv: string[], pattern: RegExp) =>
  assert.throws(
    () => parseOptions(argv, {}),
    (error: unknown) => error instanceof ExitError && error.exitCode === 2 && pattern.test(error.message),
    argv.join(' '),
  );

test("under HEARTH_ROOT the default output root is that root, never this machine's /; -o still wins", () => {
  assert.equal(parseOptions([], { HEARTH_ROOT: '/tmp/r' }).output, '/tmp/r');
  assert.equal(parseOptions(['-o', '/o'], { HEARTH_ROOT: '/tmp/r' }).output, '/o');
});

test('defaults are the original paths', () => {
  const options = parseOptions([], {});
  assert.equal(options.templates, '/usr/libexec/os-apply-config/templates');
  assert.equal(options.output, '/');
  assert.deepEqual(options.metadata, []);
  assert.deepEqual(options.fallbackMetadata, [
    '/var/cache/heat-cfntools/last_metadata',
    '/var/lib/heat-cfntools/cfn-init-data',
    '/var/lib/cloud/data/cfn-init-data',
  ]);
  assert.equal(options.osConfigFiles, '/var/lib/os-collect-config/os_config_files.json');
  assert.equal(options.legacyOsConfigFiles, '/var/run/os-collect-config/os_config_files.json');
  assert.equal(options.type, 'default');
  assert.equal(options.logFormat, 'json');
});

test('env overrides: OS_CONFIG_APPLIER_TEMPLATES, OS_CONFIG_FILES_PATH, HEARTH_ROOT', () => {
  const options = parseOptions([], { OS_CONFIG_APPLIER_TEMPLATES: '/t', OS_CONFIG_FILES_PATH: '/list.json', HEARTH_ROOT: '/r' });
  assert.equal(options.templates, '/t');
  assert.equal(options.osConfigFiles, '/list.json');
  assert.equal(options.defaultOsConfigFiles, '/list.json');
  assert.deepEqual(options.fallbackMetadata, [
    '/r/var/cache/heat-cfntools/last_metadata',
    '/r/var/lib/heat-cfntools/cfn-init-data',
    '/r/var/lib/cloud/data/cfn-init-data',
  ]);
});

test('a legacy /opt/stack template dir is used only when the new one does not exist', () => {
  const root = mkdtempSync(join(tmpdir(), 'apply-config-root-'));
  mkdirSync(join(root, 'opt/stack/os-config-applier/templates'), { recursive: true });
  assert.equal(parseOptions([], { HEARTH_ROOT: root }).templates, join(root, 'opt/stack/os-config-applier/templates'));
  mkdirSync(join(root, 'usr/libexec/os-apply-config/templates'), { recursive: true });
  assert.equal(parseOptions([], { HEARTH_ROOT: root }).templates, join(root, 'usr/libexec/os-apply-config/templates'));
});

test('argparse habits: several values after -m, the last -m wins, prefixes, attached values', () => {
  assert.deepEqual(parseOptions(['-m', 'a', 'b', '-v'], {}).metadata, ['a', 'b']);
  assert.deepEqual(parseOptions(['-m', 'a', '-m', 'b', 'c'], {}).metadata, ['b', 'c']);
  assert.deepEqual(parseOptions(['-m', 'a', '-m'], {}).metadata, []);
  assert.deepEqual(parseOptions(['--fallback-metadata'], {}).fallbackMetadata, []);
  assert.deepEqual(parseOptions(['--fallback-metadata', '/x', '--key', 'k'], {}).fallbackMetadata, ['/x']);
  const options = parseOptions(
    ['-t/tpl', '--out=/o', '--temp', '/t2', '--key-default', '-1', '--print-t', '-s', 'a.b', '--bool', 'flag'],
    {},
  );
  assert.equal(options.templates, '/t2');
  assert.equal(options.output, '/o');
  assert.equal(options.keyDefault, '-1');
  assert.equal(options.printTemplates, true);
  assert.equal(options.subhash, 'a.b');
  assert.equal(options.booleanKey, 'flag');
});

test('usage errors exit 2 with the reason', () => {
  usage(['--nope'], /unrecognized argument: --nope/);
  usage(['stray'], /unrecognized argument: stray/);
  usage(['--key'], /argument --key: expected one argument/);
  usage(['--key', '--validate'], /argument --key: expected one argument/);
  usage(['--k', 'x'], /ambiguous option: --k could match --key, --key-default/);
  usage(['--log-format', 'xml'], /invalid choice: 'xml'/);
  usage(['-x'], /unrecognized argument: -x/);
});

test('as argparse, a value may be `-` alone or start with `-` when it holds a space', () => {
  assert.equal(parseOptions(['--key', 'a.z', '--key-default', '-'], {}).keyDefault, '-');
  assert.equal(parseOptions(['--key-default', '-x y'], {}).keyDefault, '-x y');
  assert.equal(parseOptions(['--key-default', '--ke y'], {}).keyDefault, '--ke y');
  assert.deepEqual(parseOptions(['-m', 'a', '-', '-x file'], {}).metadata, ['a', '-', '-x file']);
  // Still a flag: -m with an attached `y file` (the last -m wins).
  assert.deepEqual(parseOptions(['-m', 'a', '-my file'], {}).metadata, ['y file']);
  usage(['--key-default', '--key=a b'], /argument --key-default: expected one argument/);
});

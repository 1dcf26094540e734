import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ExitError } from '@hearth/agent-kit/exit';
import { clean, cleanMain, cleanTargets } from '../../images/agent/clean.ts';

/** Instance state and image content under a fresh HEARTH_ROOT, as a used VM has them. */
const INSTANCE_FILES = [
  'var/lib/heat-cfntools/cfn-init-data',
  'var/lib/heat-cfntools/nova_meta.json',
  'var/lib/heat-cfntools/cfn-metadata-server',
  'var/cache/heat-cfntools/last_metadata',
  'etc/cfn/cfn-credentials',
  'var/lib/os-collect-config/heat_local.json',
  'var/lib/os-collect-config/hearth.json.last',
  'var/run/os-collect-config/heat_local.json',
  'var/lib/heat-config/deployed/abc.json',
  'var/lib/heat-config/heat-config-script/abc',
  'var/run/heat-config/heat-config',
  'var/lib/hearth/outbox/0001.json',
  'var/lib/hearth/credentials.json',
  'var/run/os-refresh-config.lock',
  'etc/os-collect-config.conf',
];
const IMAGE_FILES = [
  'var/lib/heat-config/hooks/script',
  'var/lib/os-collect-config/local-data/site.json',
  'etc/cfn/hooks.d/reload.conf',
  'usr/libexec/os-apply-config/templates/etc/os-collect-config.conf',
  'usr/libexec/os-refresh-config/configure.d/55-heat-config',
];

function usedRoot(): string {
  const root = mkdtempSync(join(tmpdir(), 'hearth-clean-'));
  for (const file of [...INSTANCE_FILES, ...IMAGE_FILES]) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), 'x');
  }
  return root;
}

test('clean removes instance identity, caches, markers, outbox and credentials, and keeps what the image provides', (t) => {
  const root = usedRoot();
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const removed = clean({ dryRun: false, keepConfig: false, env: { HEARTH_ROOT: root } });
  for (const file of INSTANCE_FILES) assert.equal(existsSync(join(root, file)), false, `${file} should be gone`);
  for (const file of IMAGE_FILES) assert.equal(existsSync(join(root, file)), true, `${file} should stay`);
  // Directories stay (with their modes), only their content goes; nothing is listed twice.
  assert.deepEqual(readdirSync(join(root, 'var/lib/heat-config')), ['hooks']);
  assert.equal(existsSync(join(root, 'var/lib/hearth')), true);
  const paths = removed.map((target) => target.path);
  assert.equal(new Set(paths).size, paths.length);
  assert.ok(paths.includes(join(root, 'var/lib/heat-config/deployed')));
  assert.ok(!paths.includes(join(root, 'var/lib/heat-config/deployed/abc.json')));
  assert.deepEqual(cleanTargets({ keepConfig: false, env: { HEARTH_ROOT: root } }), [], 'a second clean finds nothing');
});

test('clean --dry-run removes nothing; --keep-config keeps the collector config', (t) => {
  const root = usedRoot();
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const listed = clean({ dryRun: true, keepConfig: false, env: { HEARTH_ROOT: root } });
  assert.ok(listed.some((target) => target.path === join(root, 'etc/os-collect-config.conf')));
  for (const file of INSTANCE_FILES) assert.equal(existsSync(join(root, file)), true, `${file} should still be there`);
  clean({ dryRun: false, keepConfig: true, env: { HEARTH_ROOT: root } });
  assert.equal(existsSync(join(root, 'etc/os-collect-config.conf')), true);
  assert.equal(existsSync(join(root, 'var/lib/hearth/credentials.json')), false);
});

test('clean honours per-path overrides: a hooks dir outside heat-config is not special, the outbox elsewhere is wiped', (t) => {
  const root = usedRoot();
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const state = join(root, 'elsewhere/state');
  mkdirSync(join(state, 'outbox'), { recursive: true });
  writeFileSync(join(state, 'outbox/1.json'), '{}');
  clean({ dryRun: false, keepConfig: false, env: { HEARTH_ROOT: root, HEARTH_STATE_DIR: state, HEAT_CONFIG_HOOKS: join(root, 'hooks') } });
  assert.deepEqual(readdirSync(state), []);
  assert.equal(existsSync(join(root, 'var/lib/hearth/credentials.json')), true, 'the default state dir is not the configured one');
  assert.deepEqual(readdirSync(join(root, 'var/lib/heat-config')), [], 'hooks here are not the configured hooks dir');
});

test('clean refuses an unknown argument with exit 2 and removes nothing', async (t) => {
  const root = usedRoot();
  t.after(() => rmSync(root, { recursive: true, force: true }));
  await assert.rejects(
    cleanMain(['--force'], { HEARTH_ROOT: root }),
    (error: unknown) => error instanceof ExitError && error.exitCode === 2 && /unknown argument "--force"/.test(error.message),
  );
  assert.equal(existsSync(join(root, 'var/lib/hearth/credentials.json')), true);
});

test("clean under HEARTH_ROOT follows a rootfs's absolute symlinks inside it, never to the host's files", (t) => {
  const root = usedRoot();
  // Debian's rootfs has var/run -> /run. Here the link names a decoy standing for the host's /run, so the old
  // behaviour (following it on the host) cannot touch this machine's /run.
  const host = mkdtempSync(join(tmpdir(), 'hearth-clean-host-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  t.after(() => rmSync(host, { recursive: true, force: true }));
  const hostFiles = ['os-collect-config/heat_local.json', 'heat-config/heat-config', 'os-refresh-config.lock'];
  for (const file of hostFiles) {
    mkdirSync(dirname(join(host, file)), { recursive: true });
    writeFileSync(join(host, file), 'the host');
  }
  rmSync(join(root, 'var/run'), { recursive: true });
  symlinkSync(host, join(root, 'var/run'));
  // What the guest sees at /var/run: <root><host>, the rootfs's own files.
  const guestRun = join(root, host);
  for (const file of hostFiles) {
    mkdirSync(dirname(join(guestRun, file)), { recursive: true });
    writeFileSync(join(guestRun, file), 'the guest');
  }
  const listed = clean({ dryRun: true, keepConfig: false, env: { HEARTH_ROOT: root } });
  for (const { path } of listed) assert.ok(path.startsWith(`${root}/`), `${path} is outside the rootfs`);
  clean({ dryRun: false, keepConfig: false, env: { HEARTH_ROOT: root } });
  for (const file of hostFiles) {
    assert.equal(existsSync(join(host, file)), true, `the host's ${file} must stay`);
    assert.equal(existsSync(join(guestRun, file)), false, `the guest's ${file} must go`);
  }
  assert.deepEqual(readdirSync(join(guestRun, 'os-collect-config')), []);
});

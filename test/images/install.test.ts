// `hearth-agent install` (images/agent/install.ts) as a process, into scratch root filesystems: what it does with
// commands and hooks that are not its own, running it twice, HEARTH_ROOT, and its warnings when the guest would not
// find the commands by name. Nothing here writes outside the test's temp dir.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;
let dir = '';
let bundle = '';

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'hearth-install-'));
  const built = spawnSync(process.execPath, [join(ROOT, 'scripts/build-agent.mjs'), '--out', dir, '--no-sea'], { encoding: 'utf8' });
  assert.equal(built.status, 0, built.stderr);
  bundle = join(dir, 'hearth-agent.cjs');
});
after(() => rmSync(dir, { recursive: true, force: true }));

function install(args: string[], env: NodeJS.ProcessEnv = {}) {
  const clean = { ...process.env };
  delete clean.NODE_EXTRA_CA_CERTS;
  delete clean.HEARTH_ROOT; // only where a test sets it
  return spawnSync(bundle, ['install', ...args], { encoding: 'utf8', env: { ...clean, ...env }, timeout: 20_000 });
}

/** A merged-/usr root filesystem with hearth-agent at /usr/bin/hearth-agent. */
function scratchRoot(name: string): string {
  const rootfs = join(dir, name);
  for (const sub of ['usr/bin', 'usr/sbin', 'usr/local/bin', 'usr/local/sbin', 'etc']) mkdirSync(join(rootfs, sub), { recursive: true });
  symlinkSync('usr/bin', join(rootfs, 'bin'));
  symlinkSync('/usr/sbin', join(rootfs, 'sbin')); // absolute, as the guest sees it: followed inside the rootfs
  copyFileSync(bundle, join(rootfs, 'usr/bin/hearth-agent'));
  return rootfs;
}

/** Every entry under `path` with its link target or content, in a stable order. */
function snapshot(path: string): string[] {
  return readdirSync(path, { recursive: true, encoding: 'utf8' })
    .sort()
    .map((rel) => {
      const full = join(path, rel);
      const stat = lstatSync(full);
      const what = stat.isSymbolicLink() ? `-> ${readlinkSync(full)}` : stat.isFile() ? readFileSync(full, 'utf8') : 'dir';
      return `${rel} ${(stat.mode & 0o777).toString(8)} ${what}`;
    });
}

test("a command or hook that is not hearth-agent's is kept as NAME.pre-hearth and said so; a second install changes nothing", () => {
  const rootfs = scratchRoot('foreign');
  // A wrapper of the admin's own, a link into a virtualenv (pip's os-collect-config), a Heat image's Python hook.
  writeFileSync(join(rootfs, 'usr/bin/os-collect-config'), '#!/bin/sh\nexec /opt/occ/bin/os-collect-config "$@"\n', { mode: 0o755 });
  symlinkSync('/opt/venv/bin/cfn-signal', join(rootfs, 'usr/bin/cfn-signal'));
  mkdirSync(join(rootfs, 'var/lib/heat-config/hooks'), { recursive: true });
  writeFileSync(join(rootfs, 'var/lib/heat-config/hooks/script'), '#!/usr/bin/python3\nprint("heat")\n', { mode: 0o755 });
  // What an earlier hearth-agent install left (another --agent): replaced without a copy.
  symlinkSync('/opt/hearth-agent-0.1', join(rootfs, 'usr/bin/cfn-hup'));

  const first = install(['--root', rootfs]);
  assert.equal(first.status, 0, first.stderr);
  const bin = join(rootfs, 'usr/bin');
  for (const name of ['os-collect-config', 'cfn-signal', 'cfn-hup']) assert.equal(readlinkSync(join(bin, name)), '/usr/bin/hearth-agent');
  assert.match(readFileSync(join(bin, 'os-collect-config.pre-hearth'), 'utf8'), /exec \/opt\/occ\/bin\/os-collect-config/);
  assert.equal(readlinkSync(join(bin, 'cfn-signal.pre-hearth')), '/opt/venv/bin/cfn-signal');
  assert.equal(existsSync(join(bin, 'cfn-hup.pre-hearth')), false);
  const hooks = join(rootfs, 'var/lib/heat-config/hooks');
  assert.match(readFileSync(join(hooks, 'script.pre-hearth'), 'utf8'), /print\("heat"\)/);
  assert.match(readFileSync(join(hooks, 'script'), 'utf8'), /hook script/);
  for (const path of [join(bin, 'os-collect-config'), join(bin, 'cfn-signal'), join(hooks, 'script')]) {
    assert.ok(first.stderr.includes(`${path} was not hearth-agent's; kept it as ${path}.pre-hearth`), first.stderr);
  }
  // Nothing else to say on a clean merged-/usr rootfs: the agent is there and nothing shadows the links.
  assert.equal(
    first.stderr
      .split('\n')
      .filter((line) => line !== '' && !line.includes("was not hearth-agent's"))
      .join('\n'),
    '',
  );

  const before = snapshot(rootfs);
  const second = install(['--root', rootfs]);
  assert.equal(second.status, 0, second.stderr);
  assert.equal(second.stderr, '');
  assert.deepEqual(snapshot(rootfs), before);
});

test('install changes nothing and exits 1 when a backup name is taken or a directory is in the way', () => {
  const rootfs = scratchRoot('in-the-way');
  writeFileSync(join(rootfs, 'usr/bin/os-apply-config'), 'mine, again\n', { mode: 0o755 });
  writeFileSync(join(rootfs, 'usr/bin/os-apply-config.pre-hearth'), 'mine, kept by an earlier install\n', { mode: 0o755 });
  const before = snapshot(rootfs);
  const taken = install(['--root', rootfs]);
  assert.equal(taken.status, 1);
  assert.match(
    taken.stderr,
    /os-apply-config is not hearth-agent's and .*os-apply-config\.pre-hearth already holds an earlier copy; move one/,
  );
  assert.deepEqual(snapshot(rootfs), before);

  rmSync(join(rootfs, 'usr/bin/os-apply-config.pre-hearth'));
  mkdirSync(join(rootfs, 'var/lib/heat-config/hooks/salt'), { recursive: true });
  const dirBefore = snapshot(rootfs);
  const inTheWay = install(['--root', rootfs]);
  assert.equal(inTheWay.status, 1);
  assert.match(inTheWay.stderr, /hooks\/salt is a directory; remove it first \(nothing was installed\)/);
  assert.deepEqual(snapshot(rootfs), dirBefore);
});

test('HEARTH_ROOT stands for / when there is no --root, as for every other agent command', () => {
  const rootfs = scratchRoot('hearth-root');
  // Absolute prefix and hooks dir under the temp dir: were HEARTH_ROOT ignored, they would land there, not in the rootfs.
  const prefix = join(dir, 'hr-prefix');
  const hooksDir = join(dir, 'hr-hooks');
  const result = install(['--prefix', prefix, '--agent', '/usr/bin/hearth-agent', '--hooks-dir', hooksDir], { HEARTH_ROOT: rootfs });
  assert.equal(result.status, 0, result.stderr);
  assert.equal(readlinkSync(join(rootfs, prefix, 'bin/cfn-signal')), '/usr/bin/hearth-agent');
  assert.ok(existsSync(join(rootfs, hooksDir, 'script')));
  assert.equal(existsSync(prefix), false);
  assert.equal(existsSync(hooksDir), false);
  // --root still wins.
  const other = scratchRoot('hearth-root-other');
  const explicit = install(['--root', other], { HEARTH_ROOT: rootfs });
  assert.equal(explicit.status, 0, explicit.stderr);
  assert.equal(readlinkSync(join(other, 'usr/bin/cfn-signal')), '/usr/bin/hearth-agent');
});

test('install warns when the commands would not be found by name: shadowed on PATH, off PATH, units pointing elsewhere, no agent', () => {
  // pip's os-refresh-config in /usr/local/bin comes first on PATH: the collector's `command = os-refresh-config` runs it.
  const shadowed = scratchRoot('shadowed');
  writeFileSync(join(shadowed, 'usr/local/bin/os-refresh-config'), '#!/usr/bin/python3\n', { mode: 0o755 });
  writeFileSync(join(shadowed, 'usr/local/bin/os-apply-config'), 'not executable\n', { mode: 0o644 });
  symlinkSync('/usr/bin/hearth-agent', join(shadowed, 'usr/local/sbin/cfn-signal')); // hearth-agent itself: fine
  const first = install(['--root', shadowed]);
  assert.equal(first.status, 0, first.stderr);
  assert.match(
    first.stderr,
    /^install: \/usr\/local\/bin has its own os-refresh-config, found before \/usr\/bin on the default PATH \(\/usr\/local\/sbin:/m,
  );
  assert.doesNotMatch(first.stderr, /os-apply-config|cfn-signal|\/usr\/local\/sbin has/);

  // A prefix off PATH, with the units (ExecStart=/usr/bin/...) already there, as cloud-init writes them.
  const offPath = scratchRoot('off-path');
  rmSync(join(offPath, 'usr/bin/hearth-agent'));
  mkdirSync(join(offPath, 'usr/lib/systemd/system'), { recursive: true });
  for (const unit of ['os-collect-config.service', 'heat-config-notify.service']) {
    copyFileSync(join(ROOT, 'images/systemd', unit), join(offPath, 'usr/lib/systemd/system', unit));
  }
  const second = install(['--root', offPath, '--prefix', '/opt/hearth']);
  assert.equal(second.status, 0, second.stderr);
  assert.match(second.stderr, /^install: \/opt\/hearth\/bin is not on the default PATH \(.*: install with --prefix \/usr/m);
  assert.match(
    second.stderr,
    /^install: os-collect-config\.service runs \/usr\/bin\/os-collect-config, which is not there: edit its ExecStart= to \/opt\/hearth\/bin\/os-collect-config/m,
  );
  assert.match(second.stderr, /^install: heat-config-notify\.service runs \/usr\/bin\/heat-config-notify, which is not there/m);
  assert.match(second.stderr, /^install: \/opt\/hearth\/bin\/hearth-agent is not there yet/m);
  assert.equal(readlinkSync(join(offPath, 'opt/hearth/bin/os-collect-config')), '/opt/hearth/bin/hearth-agent');
});

// os-apply-config (the bin, as a process) writing into a nearly full disk: a small tmpfs in its own user and mount
// namespace (`unshare`, no root needed, no mount left behind). There a write takes only the bytes that fit; the file
// must not be renamed into place cut short (heat-config would read half a deployments list as none).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'os-apply-config.js');

/** Why this test cannot run here, or false. */
function skipReason(): string | false {
  const probe = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs /mnt'], {
    timeout: 10_000,
  });
  return probe.status === 0
    ? false
    : `cannot mount a tmpfs in a user namespace here (unshare: ${probe.stderr.toString().trim() || probe.status})`;
}

test(
  'a file larger than the space left fails naming it; the old file stays whole and no temp file is left',
  { skip: skipReason() },
  (t) => {
    const root = mkdtempSync(join(tmpdir(), 'apply-config-full-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    mkdirSync(join(root, 'templates/etc'), { recursive: true });
    writeFileSync(join(root, 'templates/etc/app.conf'), '{{big}}\n');
    writeFileSync(join(root, 'm.json'), JSON.stringify({ big: 'z'.repeat(40_000) }));
    const out = join(root, 'out');
    mkdirSync(out);
    const bin = [process.execPath, BIN, '--fallback-metadata', '-t', join(root, 'templates'), '-o', out, '-m', join(root, 'm.json')];
    const script = [
      `mount -t tmpfs -o size=64k tmpfs '${out}' || exit 97`,
      `mkdir '${out}/etc' && printf 'old=1\\n' > '${out}/etc/app.conf'`,
      // 32 KiB left: part of the 40 kB fits.
      `dd if=/dev/zero of='${out}/fill' bs=4k count=7 2>/dev/null`,
      `${bin.map((arg) => `'${arg}'`).join(' ')} --log-format text; echo "rc=$?"`,
      `cat '${out}/etc/app.conf'; ls -A '${out}/etc'`,
    ].join('\n');
    const run = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', script], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(run.status, 0, run.stderr);
    const [rc, ...after] = run.stdout.trim().split('\n');
    assert.equal(rc, 'rc=1', run.stderr);
    assert.deepEqual(after, ['old=1', 'app.conf'], 'the old file, whole; no temp file');
    assert.match(run.stderr, new RegExp(`ERROR os-apply-config: Could not write ${out}/etc/app\\.conf: ENOSPC`));
    assert.doesNotMatch(run.stderr, /success/);
  },
);

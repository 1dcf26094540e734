// images/bake-rootfs.sh against scratch root filesystems (no chroot, no network): what it installs holds no secret
// where another user can read it, a second bake changes nothing, the baked templates write the collector's
// credentials 0600, and Debian's own os-collect-config/heat-cfntools files are diverted rather than overwritten.
// The agent is the .cjs bundle (the host has node); `npm run test:images` bakes the single executable.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;
let dir = '';
let bundle = '';

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'hearth-bake-'));
  const built = spawnSync(process.execPath, [join(ROOT, 'scripts/build-agent.mjs'), '--out', join(dir, 'dist'), '--no-sea'], {
    encoding: 'utf8',
  });
  assert.equal(built.status, 0, built.stderr);
  bundle = join(dir, 'dist/hearth-agent.cjs');
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** An empty directory that looks like a root filesystem (bake-rootfs.sh wants usr/ and etc/). */
function scratchRoot(name: string): string {
  const rootfs = join(dir, name);
  mkdirSync(join(rootfs, 'usr'), { recursive: true });
  mkdirSync(join(rootfs, 'etc'), { recursive: true });
  return rootfs;
}

function bake(rootfs: string): SpawnSyncReturns<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, HEARTH_AGENT: bundle };
  delete env.NODE_EXTRA_CA_CERTS;
  const result = spawnSync('bash', [join(ROOT, 'images/bake-rootfs.sh'), rootfs], { encoding: 'utf8', env, timeout: 120_000 });
  assert.equal(result.status, 0, `bake-rootfs.sh: ${result.stderr}`);
  return result;
}

/** Every entry under `rootfs` with its type, mode, owner, link target and content hash, in a stable order. */
function snapshot(rootfs: string, sub = ''): string[] {
  return readdirSync(join(rootfs, sub))
    .sort()
    .flatMap((name) => {
      const rel = join(sub, name);
      const stat = lstatSync(join(rootfs, rel));
      const what = stat.isSymbolicLink()
        ? `-> ${readlinkSync(join(rootfs, rel))}`
        : stat.isFile()
          ? createHash('sha256')
              .update(readFileSync(join(rootfs, rel)))
              .digest('hex')
          : '';
      const line = `${rel} ${(stat.mode & 0o7777).toString(8)} ${stat.uid}:${stat.gid} ${what}`;
      return stat.isDirectory() ? [line, ...snapshot(rootfs, rel)] : [line];
    });
}

test('the baked state dirs that hold credentials are root-only, nothing is world-writable, and a second bake changes nothing', () => {
  const rootfs = scratchRoot('modes');
  bake(rootfs);
  // cloud-init's part-handler writes cfn-init-data (the collector's credentials among it) into /var/lib/heat-cfntools
  // with the default umask, relying on the 0700 it would give the dir; an existing dir keeps the image's mode.
  for (const path of ['var/lib/heat-cfntools', 'var/lib/hearth', 'var/lib/os-collect-config', 'etc/cfn']) {
    assert.equal((statSync(join(rootfs, path)).mode & 0o777).toString(8), '700', `${path} must be root-only`);
  }
  const worldWritable = snapshot(rootfs).filter((line) => {
    const [path, mode] = line.split(' ') as [string, string];
    return !lstatSync(join(rootfs, path)).isSymbolicLink() && (Number.parseInt(mode, 8) & 0o002) !== 0;
  });
  assert.deepEqual(worldWritable, []);
  const first = snapshot(rootfs);
  bake(rootfs);
  assert.deepEqual(snapshot(rootfs), first);
});

test('the baked templates write the collector config and the deployments 0600, and tighten an existing 0644 file', () => {
  const rootfs = scratchRoot('templates');
  bake(rootfs);
  const out = join(dir, 'templates-out');
  mkdirSync(join(out, 'etc'), { recursive: true });
  const metadata = join(dir, 'metadata.json');
  writeFileSync(
    metadata,
    JSON.stringify({
      'os-collect-config': { hearth: { metadata_url: 'http://127.0.0.1:1/', access_key_id: 'ak', secret_access_key: 'the-secret' } },
      deployments: [{ id: 'd1', group: 'script', inputs: [{ name: 'deploy_signal_id', value: 'http://127.0.0.1:1/signal?sig=x' }] }],
    }),
  );
  const render = () =>
    spawnSync(bundle, ['os-apply-config', '-t', join(rootfs, 'usr/libexec/os-apply-config/templates'), '-o', out, '-m', metadata], {
      encoding: 'utf8',
      timeout: 30_000,
    });
  let rendered = render();
  assert.equal(rendered.status, 0, rendered.stderr);
  const conf = join(out, 'etc/os-collect-config.conf');
  assert.match(readFileSync(conf, 'utf8'), /^secret_access_key = the-secret$/m);
  assert.equal((statSync(conf).mode & 0o777).toString(8), '600', 'os-collect-config.conf holds the credential');
  assert.equal((statSync(join(out, 'var/run/heat-config/heat-config')).mode & 0o777).toString(8), '600', 'the deployments');
  // A config left 0644 by an older image (or an admin) is made root-only on the next render.
  chmodSync(conf, 0o644);
  rendered = render();
  assert.equal(rendered.status, 0, rendered.stderr);
  assert.equal((statSync(conf).mode & 0o777).toString(8), '600');
});

/** dpkg, dpkg-deb and dpkg-divert, or why the Debian test cannot run here. */
function missingDpkgTool(): string | undefined {
  return ['dpkg', 'dpkg-deb', 'dpkg-divert'].find((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
}

test(
  "Debian's os-collect-config and cfn-signal are diverted, so reinstalling their package keeps hearth-agent's links",
  { skip: missingDpkgTool() && `no ${missingDpkgTool()} on this machine` },
  () => {
    // A package standing for python3-os-collect-config/heat-cfntools: it owns two of hearth-agent's names.
    const pkg = join(dir, 'fake-pkg');
    mkdirSync(join(pkg, 'DEBIAN'), { recursive: true });
    mkdirSync(join(pkg, 'usr/bin'), { recursive: true });
    writeFileSync(
      join(pkg, 'DEBIAN/control'),
      'Package: fake-cfntools\nVersion: 1.0\nArchitecture: all\nMaintainer: hearth tests <tests@example.test>\nDescription: stands for heat-cfntools\n',
    );
    for (const name of ['cfn-signal', 'os-collect-config']) {
      writeFileSync(join(pkg, 'usr/bin', name), `#!/bin/sh\necho "python ${name}"\n`, { mode: 0o755 });
    }
    const deb = join(dir, 'fake-cfntools.deb');
    const built = spawnSync('dpkg-deb', ['--root-owner-group', '--build', pkg, deb], { encoding: 'utf8' });
    assert.equal(built.status, 0, built.stderr);

    const rootfs = scratchRoot('debian');
    mkdirSync(join(rootfs, 'var/lib/dpkg/info'), { recursive: true });
    mkdirSync(join(rootfs, 'var/lib/dpkg/updates'), { recursive: true });
    writeFileSync(join(rootfs, 'var/lib/dpkg/status'), '');
    const unpack = () => {
      const result = spawnSync('dpkg', [`--root=${rootfs}`, '--force-depends', '--unpack', deb], { encoding: 'utf8', timeout: 60_000 });
      assert.equal(result.status, 0, result.stderr);
    };
    unpack();

    const baked = bake(rootfs);
    // An upgrade or reinstall of the package now lands beside the links instead of over them.
    unpack();
    for (const name of ['cfn-signal', 'os-collect-config']) {
      const path = join(rootfs, 'usr/bin', name);
      if (!lstatSync(path).isSymbolicLink()) assert.fail(`${name} was put back by the package: ${readFileSync(path, 'utf8').trim()}`);
      assert.equal(readlinkSync(path), '/usr/bin/hearth-agent', `${name} is still hearth-agent's`);
      assert.match(readFileSync(join(rootfs, 'usr/bin', `${name}.distrib`), 'utf8'), new RegExp(`python ${name}`));
    }
    assert.doesNotMatch(baked.stderr, /could not be diverted/);
    // dpkg's diversions file: path, diverted-to path, owner (":" for a local diversion), three lines each.
    const diversions = readFileSync(join(rootfs, 'var/lib/dpkg/diversions'), 'utf8');
    assert.match(diversions, /^\/usr\/bin\/cfn-signal\n\/usr\/bin\/cfn-signal\.distrib\n:\n/m);
    // A name no package owns gets no diversion.
    assert.doesNotMatch(diversions, /heat-config-notify/);
    // Baking again keeps the diversions as they are.
    bake(rootfs);
    assert.equal(readlinkSync(join(rootfs, 'usr/bin/cfn-signal')), '/usr/bin/hearth-agent');
  },
);

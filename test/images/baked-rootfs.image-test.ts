// `npm run test:images` (not part of `npm test`: it needs root, debootstrap and minutes when the cache is cold).
// A minimal Debian root filesystem (debootstrap minbase from this machine's apt mirror, cached as a tarball under
// /var/cache/hearth-test-images), baked with images/bake-rootfs.sh, then the baked agent run inside it with chroot
// and /proc mounted, against a hearth-server on 127.0.0.1: a script deployment created from outside completes
// with its outputs, a wait condition is signalled with the baked cfn-signal, and hearth-agent clean forgets the
// instance. A second rootfs, not baked, gets the agent the cloud-init way (the rendered user-data's write_files and
// runcmd) and runs a deployment too. The rootfs has no node, so everything in it runs on the single executable.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
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
import { dirname, join } from 'node:path';
import { childEnv, freePort, spawnServer, type ServerProcess } from '../helpers/server.ts';
import { aptSource, cachedRootfsTarball, hostCodename, mountRootfs, must, unpackRootfs, type MountedRootfs } from './rootfs.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Operator calls against the test server's default project. */
function operator(server: ServerProcess) {
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${server.url}/v1/default${path}`, {
      method,
      headers: { 'x-auth-token': server.token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return JSON.parse(text) as T;
  };
}

interface Deployment {
  status: string;
  status_reason: string | null;
  output_values: Record<string, unknown> | null;
}

/** The deployment once it is no longer IN_PROGRESS; fails with the guest's log after `timeoutMs`. */
async function settled(api: ReturnType<typeof operator>, id: string, guest: MountedRootfs, timeoutMs: number): Promise<Deployment> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { software_deployment: deployment } = await api<{ software_deployment: Deployment }>('GET', `/software_deployments/${id}?wait=5`);
    if (deployment.status !== 'IN_PROGRESS') return deployment;
    if (Date.now() > deadline)
      throw new Error(`deployment still IN_PROGRESS after ${timeoutMs / 1000} s; guest log tail:\n${guest.log().slice(-4000)}`);
    await sleep(200);
  }
}

/** True while `dir` is a mount point in this mount namespace. */
function mounted(dir: string): boolean {
  return readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .some((line) => line.split(' ')[1] === dir);
}

/** Stops the guest and the server, then removes the work dir, unless the rootfs's /proc is still mounted (never recurse into it). */
async function cleanUp(t: TestContext, work: string, guest: MountedRootfs | undefined, server: ServerProcess | undefined): Promise<void> {
  await guest?.close();
  if (server) {
    server.child.kill('SIGKILL');
    await server.exited;
  }
  const rootfs = join(work, 'rootfs');
  if (mounted(join(rootfs, 'proc'))) t.diagnostic(`${rootfs}/proc is still mounted; leaving ${work} in place`);
  else rmSync(work, { recursive: true, force: true });
}

test(
  'a baked Debian rootfs without node runs a deployment, signals a wait condition with cfn-signal and cleans up',
  { timeout: 25 * 60_000 },
  async (t) => {
    assert.equal(process.getuid?.(), 0, 'npm run test:images needs root (debootstrap, chroot, mount)');
    for (const tool of ['debootstrap', 'chroot', 'mount', 'tar']) {
      assert.equal(spawnSync('sh', ['-c', `command -v ${tool}`]).status, 0, `${tool} is missing: apt-get install -y debootstrap`);
    }
    const suite = hostCodename();
    const source = process.env.HEARTH_TEST_IMAGES_MIRROR ? { mirror: process.env.HEARTH_TEST_IMAGES_MIRROR, suite } : aptSource(suite);
    let started = Date.now();
    const tarball = cachedRootfsTarball(source);
    t.diagnostic(
      `rootfs ${tarball.path}: ${tarball.built ? 'debootstrapped' : 'from the cache'} in ${Date.now() - started} ms (${source.mirror} ${suite})`,
    );

    const work = mkdtempSync(join(tmpdir(), 'hearth-image-'));
    const rootfs = join(work, 'rootfs');
    let guest: MountedRootfs | undefined;
    let server: ServerProcess | undefined;
    try {
      started = Date.now();
      must(process.execPath, [join(ROOT, 'scripts/build-agent.mjs'), '--out', join(work, 'dist')], 5 * 60_000);
      unpackRootfs(tarball.path, rootfs);
      assert.equal(existsSync(join(rootfs, 'usr/bin/node')), false, 'the rootfs must have no node of its own');
      const bake = spawnSync('bash', [join(ROOT, 'images/bake-rootfs.sh'), rootfs], {
        encoding: 'utf8',
        env: childEnv({ HEARTH_AGENT: join(work, 'dist/hearth-agent') }),
        timeout: 5 * 60_000,
      });
      assert.equal(bake.status, 0, bake.stderr);
      assert.match(bake.stdout, /^baked hearth-agent \d+\.\d+\.\d+/m);
      t.diagnostic(`built and baked in ${Date.now() - started} ms`);

      // What the bake put in: the executable, a link per command, hook launchers, enabled units, the element's files.
      assert.equal(statSync(join(rootfs, 'usr/bin/hearth-agent')).mode & 0o777, 0o755);
      for (const command of [
        'os-collect-config',
        'os-refresh-config',
        'os-apply-config',
        'heat-config',
        'heat-config-notify',
        'cfn-signal',
        'cfn-hup',
      ]) {
        assert.equal(readlinkSync(join(rootfs, 'usr/bin', command)), '/usr/bin/hearth-agent', command);
      }
      assert.match(readFileSync(join(rootfs, 'var/lib/heat-config/hooks/script'), 'utf8'), /exec '\/usr\/bin\/hearth-agent' hook script/);
      for (const unit of ['os-collect-config.service', 'heat-config-notify.service', 'cfn-hup.service']) {
        assert.ok(lstatSync(join(rootfs, 'etc/systemd/system/multi-user.target.wants', unit)).isSymbolicLink(), `${unit} enabled`);
      }
      assert.equal(statSync(join(rootfs, 'usr/libexec/os-refresh-config/configure.d/55-heat-config')).mode & 0o777, 0o755);
      assert.equal(statSync(join(rootfs, 'var/lib/hearth')).mode & 0o777, 0o700);

      const dataDir = join(work, 'server-data');
      server = await spawnServer(dataDir, await freePort());
      const api = operator(server);

      // The VM's identity: registered from outside, its os-collect-config.conf written into the image as cloud-init would.
      const vm = await api<{ server: { id: string }; os_collect_config_conf: string }>('POST', '/servers', { name: 'baked-vm' });
      writeFileSync(
        join(rootfs, 'etc/os-collect-config.conf'),
        vm.os_collect_config_conf.replace('[DEFAULT]\n', '[DEFAULT]\npolling_interval = 5\n'),
        {
          mode: 0o600,
        },
      );

      guest = mountRootfs(rootfs);
      const version = guest.run(['/usr/bin/hearth-agent', '--version']);
      assert.equal(version.status, 0, version.stderr);
      assert.notEqual(guest.run(['sh', '-c', 'command -v node']).status, 0, 'no node on the guest PATH');
      guest.start(['/usr/bin/os-collect-config']);
      guest.start(['/usr/bin/heat-config-notify', '--drain', '--follow']);

      const script =
        '#!/bin/sh\necho "hello $who from $(cat /etc/debian_version)"\nprintf "%s-done" "$who" > "$heat_outputs_path.result"\n';
      const { software_config: config } = await api<{ software_config: { id: string } }>('POST', '/software_configs', {
        group: 'script',
        config: script,
        inputs: [{ name: 'who' }],
        outputs: [{ name: 'result' }],
      });
      const { software_deployment: created } = await api<{ software_deployment: { id: string } }>('POST', '/software_deployments', {
        config_id: config.id,
        server_id: vm.server.id,
        input_values: { who: 'baked' },
      });
      const deployment = await settled(api, created.id, guest, 180_000);
      assert.equal(deployment.status, 'COMPLETE', `${deployment.status_reason ?? ''}\n${guest.log().slice(-4000)}`);
      assert.equal(deployment.output_values?.result, 'baked-done');
      assert.match(String(deployment.output_values?.deploy_stdout), /^hello baked from \d+\.\d+/);
      assert.equal(deployment.output_values?.deploy_status_code, 0);
      assert.ok(readdirSync(join(rootfs, 'var/lib/heat-config/deployed')).length > 0, 'heat-config recorded the deployment');

      // A wait condition signalled from inside the image with the baked cfn-signal.
      await api('POST', '/stacks', { stack_name: 'baked' });
      const { wait_condition: created_wc } = await api<{ wait_condition: { handle: { cfn_url: string } } }>(
        'POST',
        '/stacks/baked/wait_conditions',
        {
          name: 'ready',
          count: 1,
          timeout: 600,
        },
      );
      const signal = guest.run([
        '/usr/bin/cfn-signal',
        '-e',
        '0',
        '-r',
        'baked and booted',
        '-i',
        'vm1',
        '-d',
        'from-the-image',
        created_wc.handle.cfn_url,
      ]);
      assert.equal(signal.status, 0, `cfn-signal: ${signal.stderr}`);
      const { wait_condition: wc } = await api<{ wait_condition: { status: string; data: Record<string, unknown> } }>(
        'GET',
        '/stacks/baked/wait_conditions/ready',
      );
      assert.equal(wc.status, 'COMPLETE');
      assert.deepEqual(wc.data, { vm1: 'from-the-image' });
      // A second SUCCESS on a completed condition is refused, and the baked cfn-signal says so with a non-zero exit.
      const late = guest.run(['/usr/bin/cfn-signal', '-e', '0', '-i', 'vm2', created_wc.handle.cfn_url]);
      assert.notEqual(late.status, 0);

      // Before capture: stop the agents, then hearth-agent clean forgets the instance and keeps the image's files.
      await guest.close();
      guest = mountRootfs(rootfs);
      const cleaned = guest.run(['/usr/bin/hearth-agent', 'clean']);
      assert.equal(cleaned.status, 0, cleaned.stderr);
      assert.match(cleaned.stdout, /removed \/etc\/os-collect-config.conf/);
      assert.equal(existsSync(join(rootfs, 'etc/os-collect-config.conf')), false);
      assert.deepEqual(readdirSync(join(rootfs, 'var/lib/heat-config')), ['hooks']);
      assert.deepEqual(readdirSync(join(rootfs, 'var/lib/hearth')), []);
      assert.ok(existsSync(join(rootfs, 'var/lib/heat-config/hooks/script')));
    } finally {
      await cleanUp(t, work, guest, server);
    }
  },
);

/** A cloud-config's parts this test applies, as cloud-init reads them (PyYAML). */
interface CloudConfig {
  write_files: Array<{ path: string; permissions: string; content: string }>;
  runcmd: string[][];
}

test("a stock Debian rootfs given the agent by cloud-init's user-data runs a deployment", { timeout: 25 * 60_000 }, async (t) => {
  assert.equal(process.getuid?.(), 0, 'npm run test:images needs root (debootstrap, chroot, mount)');
  assert.equal(spawnSync('python3', ['-c', 'import yaml']).status, 0, 'python3 with PyYAML (the parser cloud-init uses) is missing');
  const suite = hostCodename();
  const source = process.env.HEARTH_TEST_IMAGES_MIRROR ? { mirror: process.env.HEARTH_TEST_IMAGES_MIRROR, suite } : aptSource(suite);
  const tarball = cachedRootfsTarball(source);

  const work = mkdtempSync(join(tmpdir(), 'hearth-image-cloud-init-'));
  const rootfs = join(work, 'rootfs');
  let guest: MountedRootfs | undefined;
  let server: ServerProcess | undefined;
  try {
    must(process.execPath, [join(ROOT, 'scripts/build-agent.mjs'), '--out', join(work, 'dist')], 5 * 60_000);
    unpackRootfs(tarball.path, rootfs);
    server = await spawnServer(join(work, 'server-data'), await freePort());
    const api = operator(server);
    const vm = await api<{ server: { id: string }; os_collect_config_conf: string }>('POST', '/servers', { name: 'cloud-init-vm' });
    vm.os_collect_config_conf = vm.os_collect_config_conf.replace('[DEFAULT]\n', '[DEFAULT]\npolling_interval = 5\n');

    // The user-data as the operator renders it, read back as cloud-init does.
    const rendered = spawnSync(process.execPath, [join(ROOT, 'images/cloud-init/render-user-data.mjs'), '--preinstalled'], {
      input: JSON.stringify(vm),
      encoding: 'utf8',
    });
    assert.equal(rendered.status, 0, rendered.stderr);
    const parsed = spawnSync('python3', ['-c', 'import sys, json, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))'], {
      input: rendered.stdout,
      encoding: 'utf8',
    });
    assert.equal(parsed.status, 0, parsed.stderr);
    const userData = JSON.parse(parsed.stdout) as CloudConfig;

    // cloud-init's write_files, then the runcmd steps up to systemctl (no systemd runs here). The agent is put where
    // the download step puts it; that step itself is tested in cloud-init.test.ts.
    for (const file of userData.write_files) {
      const path = join(rootfs, file.path);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, file.content);
      chmodSync(path, parseInt(file.permissions, 8));
    }
    copyFileSync(join(work, 'dist/hearth-agent'), join(rootfs, 'usr/bin/hearth-agent'));
    chmodSync(join(rootfs, 'usr/bin/hearth-agent'), 0o755);
    guest = mountRootfs(rootfs);
    for (const step of userData.runcmd.filter((args) => args[0] !== 'systemctl')) {
      const ran = guest.run(step);
      assert.equal(ran.status, 0, `${step.join(' ')}: ${ran.stderr}`);
    }
    // The units' own command lines, as systemd would start them.
    for (const unit of ['os-collect-config.service', 'heat-config-notify.service']) {
      const execStart = /^ExecStart=(.+)$/m.exec(readFileSync(join(rootfs, 'usr/lib/systemd/system', unit), 'utf8'))?.[1];
      assert.ok(execStart, `${unit} has an ExecStart=`);
      guest.start(execStart.split(' '));
    }

    const { software_config: config } = await api<{ software_config: { id: string } }>('POST', '/software_configs', {
      group: 'script',
      config: '#!/bin/sh\nprintf "%s" "$(cat /etc/debian_version)" > "$heat_outputs_path.result"\n',
      outputs: [{ name: 'result' }],
    });
    const { software_deployment: created } = await api<{ software_deployment: { id: string } }>('POST', '/software_deployments', {
      config_id: config.id,
      server_id: vm.server.id,
    });
    const deployment = await settled(api, created.id, guest, 90_000);
    assert.equal(deployment.status, 'COMPLETE', `${deployment.status_reason ?? ''}\n${guest.log().slice(-4000)}`);
    assert.equal(deployment.output_values?.result, readFileSync(join(rootfs, 'etc/debian_version'), 'utf8').trim());
    // The first refresh re-rendered the conf from the server's metadata, still root's alone.
    assert.equal(statSync(join(rootfs, 'etc/os-collect-config.conf')).mode & 0o777, 0o600);
    // Debian's /var/run is a link to /run, which outside the chroot would be the host's.
    assert.equal(statSync(join(rootfs, 'run/heat-config/heat-config')).mode & 0o777, 0o600);
  } finally {
    await cleanUp(t, work, guest, server);
  }
});

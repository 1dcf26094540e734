// `hearth-agent clean` and the keyring: the secrets of a keyring service the agent's config reads go with the rest
// of the instance's credentials, for real against gnome-keyring-daemon's Secret Service in a private D-Bus session
// (this file runs itself again under dbus-run-session with HEARTH_CLEAN_KEYRING_SESSION=unlocked, as agent-kit's
// keyring tests do); without a reachable keyring, clean removes the files, says what it left and exits 1.
// Without dbus-run-session/gnome-keyring-daemon the session part is skipped on a dev machine and fails under CI=true.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSecretStore } from '@hearth/agent-kit/secret-store';

const session = process.env.HEARTH_CLEAN_KEYRING_SESSION;
const thisFile = fileURLToPath(import.meta.url);
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const cleanModule = join(repoRoot, 'images/agent/clean.ts');
const SESSION_TIMEOUT_MS = 60_000;

/** A HEARTH_ROOT whose os-collect-config.conf and cfn-credentials read their secrets from the keyring. */
function keyringRoot(): string {
  const root = mkdtempSync(join(tmpdir(), 'hearth-clean-keyring-'));
  const files: Record<string, string> = {
    'etc/os-collect-config.conf':
      '[hearth]\naccess_key_id = AK2\nsecret_store = keyring\nsecret_store_service = hearth-test-svc\n' +
      '[cfn]\naccess_key_id = AK1\nsecret_store = keyring\n',
    'etc/cfn/cfn-credentials': 'AWSAccessKeyId=AK1\nHearthSecretStore=keyring\n',
    'var/lib/hearth/outbox/1.json': '{}',
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  }
  return root;
}

/** `hearth-agent clean ARGS` as a process (cleanMain through tsx), with HEARTH_ROOT at `root`. */
function runClean(args: string[], root: string, env: NodeJS.ProcessEnv = process.env) {
  const code = `import { cleanMain } from ${JSON.stringify(cleanModule)}; process.exitCode = await cleanMain(process.argv.slice(1));`;
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code, '--', ...args], {
    cwd: repoRoot,
    env: { ...env, HEARTH_ROOT: root },
    encoding: 'utf8',
    timeout: 40_000,
  });
}

/** An environment with no display and no session bus, its HOME and XDG dirs in `dir` (no real keyring is touched). */
function isolatedEnv(dir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of ['NODE_TEST_CONTEXT', 'DISPLAY', 'WAYLAND_DISPLAY', 'DBUS_SESSION_BUS_ADDRESS', 'GNOME_KEYRING_CONTROL', 'CI'])
    delete env[name];
  for (const [name, sub] of [
    ['HOME', 'home'],
    ['XDG_DATA_HOME', 'home/data'],
    ['XDG_CONFIG_HOME', 'home/config'],
    ['XDG_CACHE_HOME', 'home/cache'],
    ['XDG_RUNTIME_DIR', 'run'],
  ] as const) {
    env[name] = join(dir, sub);
    mkdirSync(env[name], { recursive: true, mode: 0o700 });
  }
  return env;
}

if (session === 'unlocked') {
  test('in an unlocked session: clean removes every secret of the keyring services the config names, and only those', async (t) => {
    const root = keyringRoot();
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const agent = openSecretStore({ backend: 'keyring', service: 'hearth-agent' });
    const collector = openSecretStore({ backend: 'keyring', service: 'hearth-test-svc' });
    const other = openSecretStore({ backend: 'keyring', service: 'some-other-app' });
    await agent.set('cfn/AK1', 'secret-one');
    await collector.set('hearth/AK2', 'secret-two');
    await other.set('unrelated', 'not-ours');

    const dry = runClean(['--dry-run'], root);
    assert.equal(dry.status, 0, dry.stderr);
    assert.match(dry.stdout, /^would remove cfn\/AK1 \(keyring service "hearth-agent"\)$/m);
    assert.match(dry.stdout, /^would remove hearth\/AK2 \(keyring service "hearth-test-svc"\)$/m);
    assert.deepEqual(await agent.list(), ['cfn/AK1'], '--dry-run removes nothing');

    const done = runClean([], root);
    assert.equal(done.status, 0, done.stderr);
    assert.match(done.stdout, /^removed cfn\/AK1 \(keyring service "hearth-agent"\)$/m);
    assert.match(done.stdout, /^removed hearth\/AK2 \(keyring service "hearth-test-svc"\)$/m);
    assert.doesNotMatch(`${done.stdout}${done.stderr}`, /secret-one|secret-two/, 'no secret is printed');
    assert.deepEqual([await agent.list(), await collector.list()], [[], []]);
    assert.equal(await other.get('unrelated'), 'not-ours', 'a service the config does not name is not touched');
    assert.equal(existsSync(join(root, 'etc/cfn/cfn-credentials')), false);
    await other.delete('unrelated');
  });
}

if (session === undefined) {
  const onPath = (tool: string): boolean =>
    (process.env.PATH ?? '').split(delimiter).some((dir) => {
      try {
        accessSync(join(dir, tool), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  const missingTools = ['dbus-run-session', 'gnome-keyring-daemon'].filter((tool) => !onPath(tool));

  test(
    'for real: clean empties the configured keyring services in a dbus-run-session with gnome-keyring',
    { timeout: SESSION_TIMEOUT_MS + 10_000 },
    async (t) => {
      if (missingTools.length > 0) {
        const why = `${missingTools.join(' and ')} not installed (Debian: dbus-daemon, gnome-keyring)`;
        if (process.env.CI === 'true') assert.fail(`the real keyring test must run under CI: ${why}`);
        t.skip(why);
        return;
      }
      const dir = mkdtempSync(join(tmpdir(), 'hearth-clean-session-'));
      t.after(() => rmSync(dir, { recursive: true, force: true }));
      const unlock = 'printf %s hearth-test-passphrase | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec "$@"';
      const nodeTest = [process.execPath, '--import', 'tsx', '--test', '--test-reporter=tap', thisFile];
      const child = spawn('dbus-run-session', ['--', 'sh', '-c', unlock, 'sh', ...nodeTest], {
        cwd: repoRoot,
        env: isolatedEnv(dir, { HEARTH_CLEAN_KEYRING_SESSION: 'unlocked' }),
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), SESSION_TIMEOUT_MS);
      const exitCode = await new Promise<number | null>((resolve) => child.on('close', resolve));
      clearTimeout(timer);
      assert.equal(exitCode, 0, output);
      assert.match(output, /^# pass 1$/m, output);
      assert.match(output, /^# fail 0$/m, output);
    },
  );

  test('with no reachable keyring, clean removes the files, says which keyring secrets it left, and exits 1', (t) => {
    const root = keyringRoot();
    const dir = mkdtempSync(join(tmpdir(), 'hearth-clean-nobus-'));
    t.after(() => {
      rmSync(root, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    });
    const result = runClean([], root, isolatedEnv(dir));
    assert.equal(result.status, 1, `${result.stdout}${result.stderr}`);
    assert.match(
      result.stderr,
      /hearth-agent clean: the secrets in keyring service "hearth-agent" were NOT removed: .*; run clean again where the keyring is reachable, or delete them with hearth-agent secret --backend keyring --service hearth-agent delete NAME/,
    );
    assert.match(result.stderr, /keyring service "hearth-test-svc" were NOT removed/);
    assert.equal(existsSync(join(root, 'etc/cfn/cfn-credentials')), false, 'the files go all the same');
    assert.equal(existsSync(join(root, 'var/lib/hearth/outbox/1.json')), false);
  });

  test('a config that names no keyring: clean does not reach for one and exits 0', (t) => {
    const root = keyringRoot();
    const dir = mkdtempSync(join(tmpdir(), 'hearth-clean-nobus-'));
    t.after(() => {
      rmSync(root, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    });
    writeFileSync(join(root, 'etc/os-collect-config.conf'), '[cfn]\naccess_key_id = AK1\nsecret_store = file\n');
    writeFileSync(join(root, 'etc/cfn/cfn-credentials'), 'AWSAccessKeyId=AK1\n');
    const result = runClean([], root, isolatedEnv(dir));
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stderr, '');
    assert.doesNotMatch(result.stdout, /keyring service/);
  });
}

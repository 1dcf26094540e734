// The keyring backend, twice: against an in-memory keytar (failure paths, anywhere), and for real against
// gnome-keyring-daemon's Secret Service in a private D-Bus session. For the real part this file runs itself
// again as a child (`dbus-run-session -- ... node --test <this file>`) with HEARTH_KEYRING_SESSION saying
// which session it is in: `unlocked` (keyring unlocked), `locked` (Secret Service with no unlocked keyring)
// or `nobus` (no D-Bus at all). Without dbus-run-session/gnome-keyring-daemon the real part is skipped on
// a dev machine and fails under CI=true.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createKeyringSecretStore, type KeytarApi } from './secret-store-keyring.ts';
import { SecretStoreError } from './secret-store-error.ts';
import { openSecretStore } from './secret-store.ts';

const session = process.env.HEARTH_KEYRING_SESSION;
const thisFile = fileURLToPath(import.meta.url);
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const SESSION_TIMEOUT_MS = 60_000;

/** Asserts `promise` rejects with a SecretStoreError of `code` whose message matches every pattern; returns the message. */
async function rejectsWith(promise: Promise<unknown>, code: string, ...patterns: RegExp[]): Promise<string> {
  const error = await promise.then(
    () => assert.fail('expected a rejection'),
    (reason: unknown) => reason,
  );
  assert.ok(error instanceof SecretStoreError, `not a SecretStoreError: ${String(error)}`);
  assert.equal(error.code, code, error.message);
  for (const pattern of patterns) assert.match(error.message, pattern);
  return error.message;
}

/** Whether an executable of this name is on PATH. */
function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Runs node with `args` from the repo root without blocking this process (its servers keep answering); bounded by SESSION_TIMEOUT_MS. */
function runProcess(args: string[], input = ''): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, args, { cwd: repoRoot, env, stdio: ['pipe', 'pipe', 'pipe'], timeout: SESSION_TIMEOUT_MS });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.end(input);
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
}

/** Runs `node --import tsx --input-type=module -e code` from the repo root; its stdout, trimmed. */
function runNode(code: string, env: NodeJS.ProcessEnv = process.env): string {
  const childEnv = { ...env };
  delete childEnv.NODE_TEST_CONTEXT;
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: repoRoot,
    env: childEnv,
    encoding: 'utf8',
    timeout: SESSION_TIMEOUT_MS,
  });
  assert.equal(result.status, 0, result.stderr);
  return result.stdout.trim();
}

if (session === 'unlocked') {
  const service = `hearth-test-${process.pid}`;

  test('real keyring: set, get, list and delete round-trip through the Secret Service, and the probe leaves no item', async () => {
    const store = openSecretStore({ backend: 'keyring', service });
    assert.equal(await store.get('deploy_password'), undefined);
    assert.deepEqual(await store.list(), []);
    const value = `pä55 wörd\nline two ${'x'.repeat(10_000)}`;
    await store.set('deploy_password', value);
    await store.set('access_key', 'AKIA1');
    assert.equal(await store.get('deploy_password'), value);
    await store.set('access_key', 'AKIA2');
    assert.equal(await store.get('access_key'), 'AKIA2');
    assert.deepEqual(await store.list(), ['access_key', 'deploy_password']);
    assert.equal(await store.delete('access_key'), true);
    assert.equal(await store.delete('access_key'), false);
    assert.equal(await store.get('access_key'), undefined);
    const keytar = createRequire(import.meta.url)('@github/keytar') as KeytarApi;
    const accounts = (await keytar.findCredentials(service)).map((credential) => credential.account);
    assert.deepEqual(accounts, ['deploy_password']);
  });

  test('real keyring: items are plain Secret Service items (schema org.freedesktop.Secret.Generic, service, account) that secret-tool reads and writes', async (t) => {
    if (!onPath('secret-tool')) {
      t.skip('secret-tool (Debian libsecret-tools) is not installed');
      return;
    }
    const store = openSecretStore({ backend: 'keyring', service });
    await store.set('token', 'stored by hearth');
    const lookup = spawnSync('secret-tool', ['lookup', 'service', service, 'account', 'token'], { encoding: 'utf8' });
    assert.equal(lookup.status, 0, lookup.stderr);
    assert.equal(lookup.stdout, 'stored by hearth');
    const stored = spawnSync(
      'secret-tool',
      ['store', '--label=by secret-tool', 'xdg:schema', 'org.freedesktop.Secret.Generic', 'service', service, 'account', 'from_tool'],
      {
        input: 'stored by secret-tool',
        encoding: 'utf8',
      },
    );
    assert.equal(stored.status, 0, stored.stderr);
    assert.equal(await store.get('from_tool'), 'stored by secret-tool');
    assert.ok((await store.list()).includes('from_tool'));
  });

  test('real keyring: two services are separate, and another process sees the same items', async () => {
    const first = openSecretStore({ backend: 'keyring', service: `${service}-a` });
    const second = openSecretStore({ backend: 'keyring', service: `${service}-b` });
    await first.set('shared_name', 'value a');
    await second.set('shared_name', 'value b');
    await second.set('only_b', 'b');
    assert.equal(await first.get('shared_name'), 'value a');
    assert.equal(await second.get('shared_name'), 'value b');
    assert.deepEqual(await first.list(), ['shared_name']);
    const module = join(repoRoot, 'packages/agent-kit/src/secret-store.ts');
    const seen = runNode(
      `const { openSecretStore } = await import(${JSON.stringify(module)});` +
        `console.log(await openSecretStore({ backend: 'keyring', service: ${JSON.stringify(`${service}-a`)} }).get('shared_name'));`,
    );
    assert.equal(seen, 'value a');
  });

  test('real keyring: `hearth-agent secret --backend keyring` stores from stdin, and os-collect-config reads it with [hearth] secret_store = keyring', async () => {
    const cliService = `${service}-cli`;
    const secret = `k3yring-${process.pid}`;
    const dispatchModule = join(repoRoot, 'images/agent/dispatch.ts');
    const agentCode =
      `const { dispatch } = await import(${JSON.stringify(dispatchModule)});` +
      `dispatch({ version: 'test', commands: {}, hooks: {} }, ['node', 'hearth-agent', ...process.argv.slice(1)]);`;
    const agent = (args: string[], input = '') =>
      runProcess(
        [
          '--import',
          'tsx',
          '--input-type=module',
          '-e',
          agentCode,
          '--',
          'secret',
          '--backend',
          'keyring',
          '--service',
          cliService,
          ...args,
        ],
        input,
      );
    const set = await agent(['set', 'hearth/AK'], `${secret}\n`);
    assert.equal(set.status, 0, set.stderr);
    assert.equal(set.stderr, `stored secret "hearth/AK" in keyring service "${cliService}"\n`);
    assert.deepEqual(await openSecretStore({ backend: 'keyring', service: cliService }).list(), ['hearth/AK']);
    assert.equal((await agent(['list'])).stdout, 'hearth/AK\n');

    // A loopback stand-in for GET /v1/guest/metadata that accepts only the stored credential.
    const server = createServer((request, response) => {
      const ok = request.headers.authorization === `Bearer AK:${secret}`;
      response.writeHead(ok ? 200 : 401, { 'content-type': 'application/json', etag: '"v1"' });
      response.end(ok ? '{"deployments": [], "from": "keyring"}' : '{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const collect = [
        join(repoRoot, 'packages/collect-config/bin/os-collect-config.js'),
        '--config-file',
        '/dev/null',
        '--print',
        '--hearth-metadata-url',
        `http://127.0.0.1:${port}/v1/guest/metadata`,
        '--hearth-access-key-id',
        'AK',
        '--hearth-secret-store',
        'keyring',
        '--hearth-secret-store-service',
        cliService,
        'hearth',
      ];
      const printed = await runProcess(collect);
      assert.equal(printed.status, 0, printed.stderr);
      assert.deepEqual(JSON.parse(printed.stdout), { hearth: { deployments: [], from: 'keyring' } });
      assert.ok(!printed.stderr.includes(secret), printed.stderr);

      assert.equal((await agent(['delete', 'hearth/AK'])).status, 0);
      const missing = await runProcess(collect);
      assert.deepEqual(JSON.parse(missing.stdout), {});
      const reasons = missing.stderr
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => (JSON.parse(line) as { reason?: string }).reason);
      assert.ok(
        reasons.includes(
          `no secret "hearth/AK" in keyring service "${cliService}" ([hearth] secret_store = keyring); ` +
            `store it with: hearth-agent secret --backend keyring --service ${cliService} set hearth/AK < FILE`,
        ),
        missing.stderr,
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
} else if (session === 'locked' || session === 'nobus') {
  test(`real keyring (${session}): an unreachable or locked Secret Service is an error that says so, not "no such secret"`, async () => {
    const store = openSecretStore({ backend: 'keyring', service: 'hearth-test' });
    const bus = session === 'nobus' ? /DBUS_SESSION_BUS_ADDRESS is unset/ : /DBUS_SESSION_BUS_ADDRESS=unix:/;
    const message = await rejectsWith(
      store.get('deploy_password'),
      'ERR_SECRET_KEYRING_UNAVAILABLE',
      /^no usable Secret Service for keyring service "hearth-test": /,
      bus,
    );
    assert.match(message, /with an unlocked keyring, e\.g\. run the agent under dbus-run-session .*; or use the file backend$/);
    await rejectsWith(store.list(), 'ERR_SECRET_KEYRING_UNAVAILABLE');
    await rejectsWith(store.set('deploy_password', 'never stored'), 'ERR_SECRET_KEYRING_UNAVAILABLE');
  });
} else {
  /** keytar over a Map, with any method replaceable; records each call (never values). */
  function memoryKeytar(overrides: Partial<KeytarApi> = {}): KeytarApi & { calls: string[]; items: Map<string, string> } {
    const items = new Map<string, string>();
    const calls: string[] = [];
    const key = (service: string, account: string) => `${service}/${account}`;
    return {
      items,
      calls,
      getPassword: (service, account) => (calls.push(`get ${account}`), Promise.resolve(items.get(key(service, account)) ?? null)),
      setPassword: (service, account, password) => (
        calls.push(`set ${account}`),
        items.set(key(service, account), password),
        Promise.resolve()
      ),
      deletePassword: (service, account) => (calls.push(`delete ${account}`), Promise.resolve(items.delete(key(service, account)))),
      findCredentials: (service) =>
        Promise.resolve(
          [...items]
            .filter(([name]) => name.startsWith(`${service}/`))
            .map(([name, password]) => ({ account: name.slice(service.length + 1), password })),
        ),
      ...overrides,
    };
  }

  test('the first operation proves the keyring works with a store/read/remove probe; later ones do not repeat it', async () => {
    const keytar = memoryKeytar();
    let loads = 0;
    const store = createKeyringSecretStore({ service: 'svc', loadKeytar: () => (loads++, keytar) });
    assert.equal(loads, 0, 'nothing is loaded before the first operation');
    assert.equal(await store.get('token'), undefined);
    assert.match(
      keytar.calls.join(','),
      /^set \.hearth-probe\.[0-9a-f]{12},get \.hearth-probe\.[0-9a-f]{12},delete \.hearth-probe\.[0-9a-f]{12},get token$/,
    );
    await store.set('token', 'v');
    await store.set('b', 'w');
    assert.equal(await store.get('token'), 'v');
    assert.deepEqual(await store.list(), ['b', 'token']);
    assert.equal(await store.delete('token'), true);
    assert.equal(await store.delete('token'), false);
    assert.equal(loads, 1);
    assert.equal(keytar.calls.filter((call) => call.includes('probe')).length, 3);
    assert.deepEqual([...keytar.items.keys()], ['svc/b']);
  });

  test('a keyring that answers "nothing" to what was just stored (locked, or silently failing) is unavailable, not empty', async () => {
    const keytar = memoryKeytar({ getPassword: () => Promise.resolve(null) });
    const store = createKeyringSecretStore({ service: 'svc', loadKeytar: () => keytar, env: {} });
    await rejectsWith(
      store.get('token'),
      'ERR_SECRET_KEYRING_UNAVAILABLE',
      /^no usable Secret Service for keyring service "svc": an item just stored could not be read back \(DBUS_SESSION_BUS_ADDRESS is unset\)/,
    );
  });

  test('a Secret Service error during the probe is reported with its cause; the next operation tries again', async () => {
    let failures = 1;
    const keytar = memoryKeytar();
    const working = keytar.setPassword;
    keytar.setPassword = (service, account, password) =>
      failures-- > 0 ? Promise.reject(new Error('Cannot autolaunch D-Bus without X11 $DISPLAY')) : working(service, account, password);
    const store = createKeyringSecretStore({
      service: 'svc',
      loadKeytar: () => keytar,
      env: { DBUS_SESSION_BUS_ADDRESS: 'unix:path=/run/x' },
    });
    await rejectsWith(
      store.list(),
      'ERR_SECRET_KEYRING_UNAVAILABLE',
      /: Cannot autolaunch D-Bus without X11 \$DISPLAY \(DBUS_SESSION_BUS_ADDRESS=unix:path=\/run\/x\)/,
    );
    assert.deepEqual(await store.list(), []);
  });

  test('a Secret Service that never answers the probe (an unlock prompt nobody sees) fails after probeTimeoutMs', async () => {
    const keytar = memoryKeytar({ setPassword: () => new Promise<void>(() => undefined) });
    const store = createKeyringSecretStore({ service: 'svc', loadKeytar: () => keytar, probeTimeoutMs: 50 });
    await rejectsWith(store.get('token'), 'ERR_SECRET_KEYRING_UNAVAILABLE', /got no answer within 50 ms/);
  });

  test('a failing keytar call names the secret and the service, never the value; probe names are reserved', async () => {
    const keytar = memoryKeytar();
    const store = createKeyringSecretStore({ service: 'svc', loadKeytar: () => keytar });
    await store.list();
    keytar.setPassword = () => Promise.reject(new Error('Object does not exist at path /org/freedesktop/secrets/collection/login'));
    const message = await rejectsWith(
      store.set('deploy_password', 'hunter2'),
      'ERR_SECRET_KEYRING_FAILED',
      /^keyring service "svc": could not store secret "deploy_password": Object does not exist/,
    );
    assert.doesNotMatch(message, /hunter2/);
    await rejectsWith(store.get('.hearth-probe.abc'), 'ERR_SECRET_NAME', /reserved/);
    await rejectsWith(store.set('token', ''), 'ERR_SECRET_VALUE', /empty string/);
    keytar.items.set('svc/.hearth-probe.0123456789ab', 'left by a killed probe');
    keytar.items.set('svc/token', 'v');
    assert.deepEqual(await store.list(), ['token']);
  });

  test('without @github/keytar installed the keyring backend says to install it or use the file backend', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'hearth-no-keytar-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    for (const name of ['secret-store-keyring.ts', 'secret-store-keyring-probe.ts', 'secret-store-error.ts'])
      await copyFile(new URL(name, import.meta.url), join(dir, name));
    await writeFile(join(dir, 'package.json'), '{"type":"module"}');
    const env = { ...process.env };
    delete env.NODE_PATH;
    const output = runNode(
      `const { createKeyringSecretStore } = await import(${JSON.stringify(join(dir, 'secret-store-keyring.ts'))});` +
        `await createKeyringSecretStore({ service: 'svc' }).get('x').then(() => console.log('resolved'), (e) => console.log(JSON.stringify({ code: e.code, message: e.message })));`,
      env,
    );
    const { code, message } = JSON.parse(output) as { code: string; message: string };
    assert.equal(code, 'ERR_SECRET_KEYRING_MODULE');
    assert.match(
      message,
      /needs @github\/keytar, an optional dependency of @hearth\/agent-kit that is not installed: install it .* or use the file backend$/,
    );
  });

  /** An environment with no display and no session bus, its HOME and XDG dirs in `dir`. */
  async function isolatedEnv(dir: string, mode: string): Promise<NodeJS.ProcessEnv> {
    const env: NodeJS.ProcessEnv = { ...process.env, HEARTH_KEYRING_SESSION: mode };
    for (const name of ['NODE_TEST_CONTEXT', 'DISPLAY', 'WAYLAND_DISPLAY', 'DBUS_SESSION_BUS_ADDRESS', 'GNOME_KEYRING_CONTROL'])
      delete env[name];
    for (const [name, sub] of [
      ['HOME', 'home'],
      ['XDG_DATA_HOME', 'home/data'],
      ['XDG_CONFIG_HOME', 'home/config'],
      ['XDG_CACHE_HOME', 'home/cache'],
      ['XDG_RUNTIME_DIR', 'run'],
    ] as const) {
      env[name] = join(dir, sub);
      await mkdir(env[name], { recursive: true, mode: 0o700 });
    }
    return env;
  }

  /** Runs this file's tests for `mode` as `command args...`; asserts exactly `expectedTests` ran, `expectedSkips` of them skipped, none failed. */
  async function runSessionTests(mode: string, command: string, args: string[], expectedTests: number, expectedSkips = 0): Promise<void> {
    const dir = await mkdtemp(join(tmpdir(), 'hearth-keyring-'));
    try {
      const env = await isolatedEnv(dir, mode);
      const child = spawn(command, args, { cwd: repoRoot, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        process.kill(-child.pid!, 'SIGKILL');
      }, SESSION_TIMEOUT_MS);
      const exitCode = await new Promise<number | null>((resolve) => child.on('close', resolve));
      clearTimeout(timer);
      assert.ok(!timedOut, `the ${mode} session did not finish within ${SESSION_TIMEOUT_MS} ms:\n${output}`);
      const count = (label: string) => Number(new RegExp(`^# ${label} (\\d+)$`, 'm').exec(output)?.[1]);
      assert.equal(exitCode, 0, output);
      assert.deepEqual(
        { pass: count('pass'), fail: count('fail'), skipped: count('skipped') },
        { pass: expectedTests - expectedSkips, fail: 0, skipped: expectedSkips },
        output,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  const nodeTest = [process.execPath, '--import', 'tsx', '--test', '--test-reporter=tap', thisFile];
  const missingTools = ['dbus-run-session', 'gnome-keyring-daemon'].filter((tool) => !onPath(tool));
  /** A test that needs dbus-run-session and gnome-keyring-daemon: skipped without them, except under CI. */
  function sessionTest(name: string, fn: () => Promise<void>): void {
    test(name, { timeout: SESSION_TIMEOUT_MS + 10_000 }, async (t) => {
      if (missingTools.length > 0) {
        const why = `${missingTools.join(' and ')} not installed (Debian: dbus-daemon, gnome-keyring)`;
        if (process.env.CI === 'true') assert.fail(`the real keyring tests must run under CI: ${why}`);
        t.skip(why);
        return;
      }
      await fn();
    });
  }

  sessionTest('for real: gnome-keyring-daemon unlocked in a private dbus-run-session stores, reads, lists and deletes', () =>
    runSessionTests(
      'unlocked',
      'dbus-run-session',
      [
        '--',
        'sh',
        '-c',
        'printf %s hearth-test-passphrase | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec "$@"',
        'sh',
        ...nodeTest,
      ],
      4,
      onPath('secret-tool') ? 0 : 1,
    ),
  );

  sessionTest('for real: a D-Bus session whose Secret Service has no unlocked keyring gives ERR_SECRET_KEYRING_UNAVAILABLE', () =>
    runSessionTests('locked', 'dbus-run-session', ['--', ...nodeTest], 1),
  );

  test(
    'for real: with no D-Bus session bus at all the keyring backend gives ERR_SECRET_KEYRING_UNAVAILABLE',
    { timeout: SESSION_TIMEOUT_MS + 10_000 },
    () => runSessionTests('nobus', nodeTest[0]!, nodeTest.slice(1), 1),
  );
}

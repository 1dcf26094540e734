import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { WaitCondition } from '@hearth/protocol';
import { startServer, type TestServer } from '../../../test/helpers/server.ts';

// End-to-end: spawns the real `hearth` CLI against a real hearth-server on 127.0.0.1 for stacks,
// wait conditions (signalled with plain HTTP, as a VM's curl would) and server transports.

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const STACK = 'e2e-wc';

/** How a `hearth` process ended. */
interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/** A running `hearth` process. */
interface CliProcess {
  done: Promise<CliResult>;
  /** Resolves once its stderr matches `pattern` (rejects if it exits first). */
  stderrMatches(pattern: RegExp): Promise<void>;
  /** Sends SIGINT, as Ctrl-C does. */
  interrupt(): void;
}

let server: TestServer;
const children = new Set<ChildProcess>();

/** Environment of a CLI process: no NODE_EXTRA_CA_CERTS, no stray HEARTH_*, then the test server's URL and token. */
function cliEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('HEARTH_') || key === 'NODE_EXTRA_CA_CERTS') delete env[key];
  return { ...env, HEARTH_URL: server.url, HEARTH_TOKEN: server.token };
}

/** Starts `hearth ARGS` against the test server. */
function startHearth(args: string[]): CliProcess {
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', ...args], {
    cwd: repoRoot,
    env: cliEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  const watchers: Array<() => void> = [];
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    for (const watch of watchers) watch();
  });
  const done = new Promise<CliResult>((resolve) =>
    child.once('close', (code) => {
      children.delete(child);
      resolve({ code, stdout, stderr, durationMs: Date.now() - started });
    }),
  );
  return {
    done,
    interrupt: () => child.kill('SIGINT'),
    stderrMatches: (pattern) =>
      new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (pattern.test(stderr)) resolve();
        };
        watchers.push(check);
        check();
        void done.then(() => reject(new Error(`hearth ${args.join(' ')} exited before printing ${pattern}:\n${stdout}\n${stderr}`)));
      }),
  };
}

/** Runs `hearth ARGS` to the end. */
function hearth(args: string[]): Promise<CliResult> {
  return startHearth(args).done;
}

/** Runs `hearth ARGS --json`, asserts exit 0, and parses its stdout. */
async function hearthJson<T>(args: string[]): Promise<T> {
  const result = await hearth([...args, '--json']);
  assert.equal(result.code, 0, `hearth ${args.join(' ')}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** Creates a wait condition in the test stack with `hearth waitcondition create`; returns it with its handle. */
async function createCondition(name: string, extra: string[]): Promise<WaitCondition> {
  const created = await hearthJson<{ wait_condition: WaitCondition }>(['waitcondition', 'create', name, '--stack', STACK, ...extra]);
  return created.wait_condition;
}

/** Signals a condition as a VM would: POST a Heat body to the handle's endpoint with X-Auth-Token. */
async function signal(wc: WaitCondition, body: Record<string, unknown>): Promise<void> {
  const response = await fetch(wc.handle.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-auth-token': wc.handle.token },
    body: JSON.stringify(body),
  });
  assert.ok(response.ok, `signal ${JSON.stringify(body)}: HTTP ${response.status} ${await response.text()}`);
}

before(async () => {
  server = await startServer();
});
after(async () => {
  for (const child of children) child.kill('SIGTERM');
  await server.close();
});

// A guard against a hang, not a bound: its ~20 CLI processes take 15-20 s here, and took 124 s on a machine
// loaded 9 deep, which the old 120 s cut off.
describe('hearth stack and waitcondition against a real hearth-server', { timeout: 600_000 }, () => {
  test('stack create, list and show; a taken name is refused', async () => {
    const created = await hearthJson<{ stack: { id: string; stack_name: string } }>(['stack', 'create', STACK]);
    assert.equal(created.stack.stack_name, STACK);
    const listed = await hearthJson<{ stacks: Array<{ id: string }> }>(['stack', 'list']);
    assert.ok(listed.stacks.some((s) => s.id === created.stack.id));
    const shown = await hearth(['stack', 'show', STACK]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`^id: +${created.stack.id}$`, 'm'));
    const again = await hearth(['stack', 'create', STACK]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /\(HTTP 409, ERR_STACK_EXISTS\)/);
  });

  test('wait exits 0 once 3 signals landed, showing N/3 received, and prints the data', async () => {
    const wc = await createCondition('ready', ['--count', '3', '--timeout', '120']);
    assert.equal(wc.status, 'IN_PROGRESS');
    assert.match(wc.handle.endpoint, /^http:\/\/127\.0\.0\.1:\d+\//);
    assert.notEqual(wc.handle.token, '');

    const wait = startHearth(['waitcondition', 'wait', 'ready', '--stack', STACK, '--timeout', '60', '--json']);
    await wait.stderrMatches(/0\/3 received, \d+ s elapsed/);
    for (const n of ['1', '2', '3']) await signal(wc, { status: 'SUCCESS', id: n, data: `d${n}` });
    const result = await wait.done;
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /3\/3 received/);
    const counts = [...result.stderr.matchAll(/(\d)\/3 received/g)].map((m) => Number(m[1]));
    assert.deepEqual(
      counts,
      [...counts].sort((a, b) => a - b),
      `progress never goes back: ${result.stderr}`,
    );
    const final = (JSON.parse(result.stdout) as { wait_condition: WaitCondition }).wait_condition;
    assert.equal(final.status, 'COMPLETE');
    assert.deepEqual(final.data, { '1': 'd1', '2': 'd2', '3': 'd3' });

    const human = await hearth(['waitcondition', 'wait', 'ready', '--stack', STACK]);
    assert.equal(human.code, 0, human.stderr);
    assert.equal(human.stdout, '1: d1\n2: d2\n3: d3\n');
  });

  test('wait exits 1 after a FAILURE signal, printing the reason', async () => {
    const wc = await createCondition('failing', ['--count', '2', '--timeout', '120']);
    const wait = startHearth(['waitcondition', 'wait', 'failing', '--stack', STACK, '--timeout', '60']);
    await wait.stderrMatches(/0\/2 received/);
    await signal(wc, { status: 'FAILURE', id: 'n1', reason: 'boom on n1', data: 'x' });
    const result = await wait.done;
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /^hearth: wait condition failing FAILED: .*boom on n1/m);
  });

  test('wait exits 2 when its own --timeout passes with no signal', async () => {
    await createCondition('quiet', ['--count', '1', '--timeout', '600']);
    const result = await hearth(['waitcondition', 'wait', 'quiet', '--stack', STACK, '--timeout', '2']);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /still IN_PROGRESS after 2 s \(--timeout\): 0\/1 received/);
    assert.ok(result.durationMs < 15_000, `took ${result.durationMs} ms`);
  });

  test('Ctrl-C ends a wait with exit 130 and a line saying where it stood; the condition goes on', async () => {
    const wc = await createCondition('interrupted', ['--count', '2', '--timeout', '600']);
    await signal(wc, { status: 'SUCCESS', id: 'n1', data: 'x' });
    const wait = startHearth(['waitcondition', 'wait', 'interrupted', '--stack', STACK, '--json']);
    await wait.stderrMatches(/1\/2 received, \d+ s elapsed/);
    wait.interrupt();
    const result = await wait.done;
    assert.equal(result.code, 130, result.stderr);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^hearth: interrupted after \d+ s: wait condition interrupted was IN_PROGRESS, 1\/2 received/m);
    assert.match(result.stderr, /^hearth: hint: wait again with `hearth waitcondition wait interrupted --stack e2e-wc`$/m);
    const shown = await hearthJson<{ wait_condition: WaitCondition }>(['waitcondition', 'show', 'interrupted', '--stack', STACK]);
    assert.equal(shown.wait_condition.status, 'IN_PROGRESS');
    assert.equal((await hearth(['waitcondition', 'delete', 'interrupted', '--stack', STACK])).code, 0);
  });

  test("wait exits 1 when the condition's own timeout fails it first", async () => {
    await createCondition('short', ['--timeout', '1']);
    const result = await hearth(['waitcondition', 'wait', 'short', '--stack', STACK, '--timeout', '30']);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /^hearth: wait condition short FAILED: /m);
    assert.ok(result.durationMs < 25_000, `took ${result.durationMs} ms`);
  });

  test('create prints the handle; list, show and delete; unknown names are ERR_WAIT_CONDITION_NOT_FOUND', async () => {
    const human = await hearth(['waitcondition', 'create', 'shown', '--stack', STACK, '--timeout', '600', '--max-failures', '1']);
    assert.equal(human.code, 0, human.stderr);
    for (const key of ['cfn_url', 'endpoint', 'token', 'curl_cli', 'signal_url'])
      assert.match(human.stdout, new RegExp(`^ {2}${key}: +\\S`, 'm'));
    const listed = await hearthJson<{ wait_conditions: WaitCondition[] }>(['waitcondition', 'list', '--stack', STACK]);
    assert.deepEqual(listed.wait_conditions.map((wc) => wc.name).sort(), ['failing', 'quiet', 'ready', 'short', 'shown']);
    const shown = await hearthJson<{ wait_condition: WaitCondition }>(['waitcondition', 'show', 'shown', '--stack', STACK]);
    assert.equal(shown.wait_condition.max_failures, 1);
    assert.deepEqual(await hearthJson(['waitcondition', 'delete', 'shown', '--stack', STACK]), {
      deleted: true,
      stack: STACK,
      name: 'shown',
    });
    const gone = await hearth(['waitcondition', 'show', 'shown', '--stack', STACK]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /\(HTTP 404, ERR_WAIT_CONDITION_NOT_FOUND\)/);
  });

  test('server create --transport --stack prints the os-collect-config.conf; the stack is deleted once empty', async () => {
    const human = await hearth(['server', 'create', 'vm-a', '--id', 'vm-wc-a', '--transport', 'POLL_TEMP_URL', '--stack', STACK]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^software_config_transport: +POLL_TEMP_URL$/m);
    assert.match(human.stdout, /^stack_name: +e2e-wc$/m);
    assert.match(human.stdout, /to \/etc\/os-collect-config\.conf in the VM/);
    assert.match(human.stdout, /^--- \/etc\/os-collect-config\.conf ---\n\[/m);

    const json = await hearthJson<{ server: { id: string }; os_collect_config: Record<string, unknown>; os_collect_config_conf: string }>([
      'server',
      'create',
      'vm-b',
      '--transport',
      'poll_server_cfn',
      '--stack',
      STACK,
      '--resource-name',
      'node-b',
    ]);
    assert.ok(Object.keys(json.os_collect_config).length > 0);
    assert.match(json.os_collect_config_conf, /\[/);

    const refused = await hearth(['stack', 'delete', STACK]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /\(HTTP 409, ERR_STACK_NOT_EMPTY\)/);
    for (const id of ['vm-wc-a', json.server.id]) assert.equal((await hearth(['server', 'delete', id])).code, 0);
    const deleted = await hearth(['stack', 'delete', STACK]);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal(deleted.stdout, `deleted stack ${STACK}\n`);
    const gone = await hearth(['stack', 'show', STACK]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /\(HTTP 404, ERR_STACK_NOT_FOUND\)/);
    const conditionsGone = await hearth(['waitcondition', 'show', 'ready', '--stack', STACK]);
    assert.equal(conditionsGone.code, 1);
    assert.match(conditionsGone.stderr, /ERR_(STACK|WAIT_CONDITION)_NOT_FOUND/);
  });
});

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@hearth/client';
import { freePort, startServer, type TestServer } from '../../../test/helpers/server.ts';

// End-to-end: spawns the real `hearth` CLI as a process against a real hearth-server on 127.0.0.1.

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** How a `hearth` process ended. */
interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/** A running `hearth` process. */
interface CliProcess {
  /** Resolves when it has exited. */
  done: Promise<CliResult>;
  /** Resolves once its stderr matches `pattern` (rejects if it exits first). */
  stderrMatches(pattern: RegExp): Promise<void>;
  /** Sends SIGTERM. */
  stop(): void;
  /** Sends SIGINT, as Ctrl-C does. */
  interrupt(): void;
  /** Resolves once its stdout matches `pattern` (rejects if it exits first). */
  stdoutMatches(pattern: RegExp): Promise<void>;
}

let server: TestServer;
let scratch: string;

/** Environment of a CLI process: no NODE_EXTRA_CA_CERTS, no stray HEARTH_*, then `extra`. */
function cliEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('HEARTH_') || key === 'NODE_EXTRA_CA_CERTS') delete env[key];
  return { ...env, ...extra };
}

/** Starts `hearth ARGS` (by default against the test server with its admin token). */
function startHearth(args: string[], env: Record<string, string> = { HEARTH_URL: server.url, HEARTH_TOKEN: server.token }): CliProcess {
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', ...args], {
    cwd: repoRoot,
    env: cliEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const watchers: Array<() => void> = [];
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    for (const watch of watchers) watch();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    for (const watch of watchers) watch();
  });
  const done = new Promise<CliResult>((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr, durationMs: Date.now() - started })),
  );
  const matches = (read: () => string) => (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (pattern.test(read())) resolve();
      };
      watchers.push(check);
      check();
      void done.then(() => reject(new Error(`hearth ${args.join(' ')} exited before printing ${pattern}:\n${stdout}\n${stderr}`)));
    });
  return {
    done,
    stderrMatches: matches(() => stderr),
    stdoutMatches: matches(() => stdout),
    stop: () => child.kill('SIGTERM'),
    interrupt: () => child.kill('SIGINT'),
  };
}

/** Runs `hearth ARGS` to the end. */
function hearth(args: string[], env?: Record<string, string>): Promise<CliResult> {
  return startHearth(args, env).done;
}

/** Runs `hearth ARGS --json`, asserts exit 0, and parses its stdout. */
async function hearthJson<T>(args: string[]): Promise<T> {
  const result = await hearth([...args, '--json']);
  assert.equal(result.code, 0, `hearth ${args.join(' ')}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

before(async () => {
  server = await startServer();
  scratch = server.dataDir;
});
after(() => server.close());

describe('hearth CLI against a real hearth-server', () => {
  const ids = { server: '', token: '', config: '' };

  /** Creates a deployment of the test config to the test server; returns its id. */
  async function newDeployment(extra: string[] = []): Promise<string> {
    const created = await hearthJson<{ software_deployment: { id: string; status: string } }>([
      'deployment',
      'create',
      '--config',
      ids.config,
      '--server',
      ids.server,
      ...extra,
    ]);
    return created.software_deployment.id;
  }

  test('server create prints the one-time credential; list and show find the server', async () => {
    const result = await hearth(['server', 'create', 'web-1', '--id', 'vm-e2e-1', '--json']);
    assert.equal(result.code, 0, result.stderr);
    const created = JSON.parse(result.stdout) as { server: { id: string; name: string }; credential: { token: string } };
    assert.equal(created.server.id, 'vm-e2e-1');
    assert.equal(created.server.name, 'web-1');
    assert.match(created.credential.token, /^.+:.+$/);
    assert.match(result.stderr, /shown only this once/);
    ids.server = created.server.id;
    ids.token = created.credential.token;

    const human = await hearth(['server', 'create', 'web-2']);
    assert.equal(human.code, 0);
    assert.match(human.stdout, /^name: +web-2$/m);
    assert.match(human.stdout, /agent credential \(shown only this once/);

    const listed = await hearthJson<{ servers: Array<{ id: string }> }>(['server', 'list']);
    assert.ok(listed.servers.some((s) => s.id === 'vm-e2e-1'));
    const table = await hearth(['server', 'list']);
    assert.match(table.stdout, /^ID +NAME +LAST SEEN +CREATED\n/);
    assert.match(table.stdout, /^vm-e2e-1 +web-1 +- +\d{4}-/m);

    const shown = await hearthJson<{ server: { id: string } }>(['server', 'show', 'vm-e2e-1']);
    assert.equal(shown.server.id, 'vm-e2e-1');
  });

  test('config create reads the body and a YAML definition file, plus inputs and outputs from flags', async () => {
    writeFileSync(join(scratch, 'run.sh'), '#!/bin/sh\necho "hello $greeting"\n');
    writeFileSync(join(scratch, 'def.yaml'), 'inputs:\n  - name: greeting\n    default: hi\noutputs:\n  - name: result\n');
    writeFileSync(join(scratch, 'options.yaml'), 'retries: 2\n');
    const created = await hearthJson<{
      software_config: { id: string; inputs: Array<Record<string, unknown>>; outputs: Array<Record<string, unknown>>; options: unknown };
    }>([
      'config',
      'create',
      'hello',
      '--group',
      'script',
      '--config-file',
      join(scratch, 'run.sh'),
      '--definition-file',
      join(scratch, 'def.yaml'),
      '--input',
      'port=8080',
      '--input-type',
      'port=Number',
      '--output',
      'url',
      '--error-output',
      'problem',
      '--options-file',
      join(scratch, 'options.yaml'),
    ]);
    const config = created.software_config;
    ids.config = config.id;
    assert.deepEqual(
      config.inputs.map((i) => [i.name, i.type, i.default]),
      [
        ['greeting', 'String', 'hi'],
        ['port', 'Number', 8080],
      ],
    );
    assert.deepEqual(
      config.outputs.map((o) => [o.name, o.error_output]),
      [
        ['result', false],
        ['url', false],
        ['problem', true],
      ],
    );
    assert.deepEqual(config.options, { retries: 2 });

    const listed = await hearthJson<{ software_configs: Array<{ id: string }> }>(['config', 'list']);
    assert.ok(listed.software_configs.some((c) => c.id === config.id));
    const shown = await hearth(['config', 'show', config.id]);
    assert.equal(shown.code, 0);
    assert.match(shown.stdout, /^config:\n {2}#!\/bin\/sh\n {2}echo "hello \$greeting"\n/m);
    assert.match(shown.stdout, /^ {2}port \(Number\) default 8080$/m);
  });

  test('config create refuses a config file over the server limit before uploading it', async () => {
    const before = await hearthJson<{ software_configs: unknown[] }>(['config', 'list']);
    writeFileSync(join(scratch, 'huge.sh'), `#!/bin/sh\n${'# filler\n'.repeat(700_000)}`);
    const result = await hearth(['config', 'create', 'huge', '--group', 'script', '--config-file', join(scratch, 'huge.sh')]);
    assert.equal(result.code, 64, result.stderr);
    assert.equal(result.stdout, '');
    assert.match(
      result.stderr,
      /^hearth: --config-file \S+huge\.sh has 6300010 characters: hearth-server takes a config body of at most 4194304/m,
    );
    assert.match(result.stderr, /^hearth: hint: /m);
    const after = await hearthJson<{ software_configs: unknown[] }>(['config', 'list']);
    assert.equal(after.software_configs.length, before.software_configs.length);
  });

  test('config create refuses a config file that is not UTF-8 instead of uploading it mangled', async () => {
    const before = await hearthJson<{ software_configs: unknown[] }>(['config', 'list']);
    writeFileSync(join(scratch, 'latin1.sh'), Buffer.from('echo caf\xe9\n', 'latin1'));
    const result = await hearth(['config', 'create', 'latin1', '--group', 'script', '--config-file', join(scratch, 'latin1.sh')]);
    assert.equal(result.code, 64, result.stderr);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^hearth: --config-file \S+latin1\.sh is not UTF-8 text \(ERR_USAGE\)\nhearth: hint: .*iconv/m);
    const after = await hearthJson<{ software_configs: unknown[] }>(['config', 'list']);
    assert.equal(after.software_configs.length, before.software_configs.length);
  });

  test('deployment create, show and list', async () => {
    const id = await newDeployment(['--input', 'greeting=hey', '--name', 'first', '--timeout', '600']);
    const shown = await hearthJson<{ software_deployment: Record<string, unknown> }>(['deployment', 'show', id]);
    assert.equal(shown.software_deployment.status, 'IN_PROGRESS');
    assert.equal(shown.software_deployment.timeout, 600);
    assert.deepEqual(shown.software_deployment.input_values, { greeting: 'hey' });
    const listed = await hearthJson<{ software_deployments: Array<{ id: string }> }>(['deployment', 'list', '--server', ids.server]);
    assert.ok(listed.software_deployments.some((d) => d.id === id));
    const table = await hearth(['deployment', 'list']);
    assert.match(table.stdout, new RegExp(`^${id} +first +${ids.server} +CREATE +IN_PROGRESS `, 'm'));
  });

  test('deployment wait exits 0 once the agent signals success; deployment output prints it', async () => {
    const id = await newDeployment();
    const wait = startHearth(['deployment', 'wait', id, '--timeout', '60', '--json']);
    await wait.stderrMatches(new RegExp(`deployment ${id}: IN_PROGRESS, \\d+ s elapsed`));
    const agent = createClient({ url: server.url, token: ids.token });
    await agent.signal(id, { deploy_stdout: 'done\n', deploy_stderr: '', deploy_status_code: 0, result: '42' });
    const result = await wait.done;
    assert.equal(result.code, 0, result.stderr);
    assert.equal((JSON.parse(result.stdout) as { software_deployment: { status: string } }).software_deployment.status, 'COMPLETE');
    assert.match(result.stderr, /COMPLETE after \d+ s/);

    const one = await hearth(['deployment', 'output', id, 'result']);
    assert.equal(one.code, 0);
    assert.equal(one.stdout, '42\n');
    const all = await hearth(['deployment', 'output', id]);
    assert.deepEqual(JSON.parse(all.stdout), { result: '42', deploy_stdout: 'done\n', deploy_stderr: '', deploy_status_code: 0 });
    const missing = await hearth(['deployment', 'output', id, 'nope']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no output "nope"/);

    const timeline = await hearthJson<{ timeline: Array<{ type: string }> }>(['deployment', 'timeline', id]);
    assert.deepEqual(
      timeline.timeline.map((e) => e.type).filter((t) => t !== 'deployment.fetched'),
      ['deployment.created', 'deployment.completed'],
    );
  });

  test('deployment show cuts a big output to a line that says how to print it whole', async () => {
    const id = await newDeployment();
    const agent = createClient({ url: server.url, token: ids.token });
    const big = `${'log line\n'.repeat(60_000)}end`;
    await agent.signal(id, { deploy_stdout: big, deploy_stderr: '', deploy_status_code: 0, result: 'ok' });
    const shown = await hearth(['deployment', 'show', id]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.ok(shown.stdout.length < 2000, `${shown.stdout.length} characters`);
    const command = `hearth deployment output ${id} deploy_stdout`;
    const line = new RegExp(`^ {2}deploy_stdout: "(log line\\\\n){22}lo… \\(540003 characters; all of it: ${command}\\)$`, 'm');
    assert.match(shown.stdout, line);
    assert.match(shown.stdout, /^ {2}result: "ok"$/m);
    const whole = await hearth(command.split(' ').slice(1));
    assert.equal(whole.stdout, `${big}\n`);
    const json = await hearthJson<{ software_deployment: { output_values: Record<string, unknown> } }>(['deployment', 'show', id]);
    assert.equal(json.software_deployment.output_values.deploy_stdout, big);
  });

  test('deployment wait exits 1 after a failing signal', async () => {
    const id = await newDeployment();
    const wait = startHearth(['deployment', 'wait', id, '--timeout', '60']);
    await wait.stderrMatches(/IN_PROGRESS/);
    const agent = createClient({ url: server.url, token: ids.token });
    await agent.signal(id, { deploy_stdout: '', deploy_stderr: 'boom\n', deploy_status_code: 1 });
    const result = await wait.done;
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, new RegExp(`hearth: deployment ${id} FAILED: `));
  });

  test('text from the server or a VM never reaches the terminal raw; tables line up by display width', async () => {
    const hostile = 'evil\x1b[2J\x1b]0;owned\x07';
    assert.equal((await hearth(['server', 'create', hostile, '--id', 'vm-hostile'])).code, 0);
    assert.equal((await hearth(['server', 'create', '日本語👍', '--id', 'vm-wide'])).code, 0);
    const table = await hearth(['server', 'list']);
    assert.equal(table.code, 0, table.stderr);
    assert.doesNotMatch(table.stdout, /(?!\n)\p{Cc}/u);
    const shown = 'evil\\x1b[2J\\x1b]0;owned\\x07';
    const lines = table.stdout.split('\n');
    const hostileLine = lines.find((line) => line.startsWith('vm-hostile '));
    const wideLine = lines.find((line) => line.startsWith('vm-wide '));
    assert.ok(hostileLine?.includes(` ${shown}  `), table.stdout);
    // '日本語👍' takes 8 columns: the LAST SEEN column starts where it does in the other rows.
    const lastSeenAt = (lines[0] ?? '').indexOf('LAST SEEN');
    assert.equal(hostileLine?.indexOf(`${shown}  `), (lines[0] ?? '').indexOf('NAME'));
    assert.equal(hostileLine?.indexOf(' -  '), lastSeenAt - 1);
    assert.equal(wideLine?.replace('日本語👍', 'x'.repeat(8)).indexOf(' -  '), lastSeenAt - 1, table.stdout);
    const show = await hearth(['server', 'show', 'vm-hostile']);
    assert.match(show.stdout, /^name: +evil\\x1b\[2J\\x1b\]0;owned\\x07$/m);

    const id = await newDeployment();
    const wait = startHearth(['deployment', 'wait', id, '--timeout', '60']);
    await wait.stderrMatches(/IN_PROGRESS/);
    const agent = createClient({ url: server.url, token: ids.token });
    await agent.signal(id, { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 1, problem: '\x1b[2Jwiped\x1b[0m' });
    const result = await wait.done;
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /\\x1b\[2Jwiped\\x1b\[0m/);
    assert.doesNotMatch(result.stderr, /(?!\n)\p{Cc}/u);
  });

  test('Ctrl-C ends deployment wait with exit 130 and a line; the deployment goes on', async () => {
    const id = await newDeployment();
    const wait = startHearth(['deployment', 'wait', id, '--timeout', '60', '--json']);
    await wait.stderrMatches(/IN_PROGRESS, \d+ s elapsed/);
    wait.interrupt();
    const result = await wait.done;
    assert.equal(result.code, 130, result.stderr);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, new RegExp(`^hearth: interrupted after \\d+ s: deployment ${id} was IN_PROGRESS`, 'm'));
    assert.match(result.stderr, new RegExp(`^hearth: hint: wait again with \`hearth deployment wait ${id}\`$`, 'm'));
    const shown = await hearthJson<{ software_deployment: { status: string } }>(['deployment', 'show', id]);
    assert.equal(shown.software_deployment.status, 'IN_PROGRESS');
  });

  test('deployment wait exits 2 when its own --timeout passes', async () => {
    const id = await newDeployment();
    const result = await hearth(['deployment', 'wait', id, '--timeout', '2']);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /still IN_PROGRESS after 2 s \(--timeout\)/);
    assert.ok(result.durationMs < 15_000, `took ${result.durationMs} ms`);
  });

  test('deployment update starts a new action with merged inputs', async () => {
    const id = await newDeployment(['--input', 'greeting=a', '--no-signal']);
    const updated = await hearthJson<{ software_deployment: { action: string; input_values: unknown } }>([
      'deployment',
      'update',
      id,
      '--action',
      'update',
      '--input',
      'port:=9090',
    ]);
    assert.equal(updated.software_deployment.action, 'UPDATE');
    assert.deepEqual(updated.software_deployment.input_values, { greeting: 'a', port: 9090 });
  });

  test('events lists what happened, filtered by resource; --follow streams new events', async () => {
    const page = await hearthJson<{ events: Array<{ id: number; type: string; resource_id: string }>; next_cursor: string }>(['events']);
    assert.ok(page.events.some((e) => e.type === 'server.created' && e.resource_id === ids.server));
    assert.ok(page.events.some((e) => e.type === 'config.created' && e.resource_id === ids.config));
    const filtered = await hearthJson<{ events: Array<{ resource_id: string }> }>(['events', '--resource', ids.server]);
    assert.ok(filtered.events.length > 0);
    assert.ok(filtered.events.every((e) => e.resource_id === ids.server));
    const table = await hearth(['events', '--limit', '2']);
    assert.match(table.stdout, /^ID +TIME +TYPE +RESOURCE +MESSAGE\n/);

    // The command printed for the next page keeps the filters: pasted, it lists more of the same.
    const first = await hearth(['events', '--type', 'server.created', '--limit', '1']);
    const next = /^hearth: more events may follow: (hearth events --after \d+ --type server\.created --limit 1)$/m.exec(first.stderr);
    assert.ok(next?.[1], first.stderr);
    const pasted = await hearth(next[1].split(' ').slice(1));
    assert.equal(pasted.code, 0, pasted.stderr);
    const rows = pasted.stdout.trim().split('\n').slice(1);
    assert.equal(rows.length, 1, pasted.stdout);
    assert.match(rows[0] ?? '', /^\d+ +\S+ +server\.created /);

    const follow = startHearth(['events', '--follow', '--json', '--after', page.next_cursor]);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal((await hearth(['server', 'create', 'followed', '--id', 'vm-followed'])).code, 0);
    await follow.stdoutMatches(/"resource_id":"vm-followed"/);
    follow.stop();
    const lines = (await follow.done).stdout.trim().split('\n');
    const streamed = lines.map((line) => JSON.parse(line) as { type: string; id: number });
    assert.ok(streamed.every((e) => e.id > Number(page.next_cursor)));
    assert.ok(streamed.some((e) => e.type === 'server.created'));
  });

  test('deletes: a config in use is refused, then deployment, config and server go', async () => {
    const inUse = await hearth(['config', 'delete', ids.config]);
    assert.equal(inUse.code, 1);
    assert.match(inUse.stderr, /ERR_CONFIG_IN_USE/);
    const deployments = await hearthJson<{ software_deployments: Array<{ id: string }> }>(['deployment', 'list']);
    const deleted = await Promise.all(deployments.software_deployments.map((d) => hearthJson(['deployment', 'delete', d.id])));
    assert.deepEqual(
      deleted,
      deployments.software_deployments.map((d) => ({ deleted: true, id: d.id })),
    );
    assert.equal((await hearth(['config', 'delete', ids.config])).code, 0);
    assert.equal((await hearth(['server', 'delete', ids.server])).stdout, `deleted server ${ids.server}\n`);
    const gone = await hearth(['server', 'show', ids.server]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /ERR_SERVER_NOT_FOUND/);
  });

  test('failures: unknown id, missing or wrong token, unreachable server, bad flags', async () => {
    const unknown = await hearth(['deployment', 'show', '00000000-0000-4000-8000-000000000000']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^hearth: .*\(HTTP 404, ERR_DEPLOYMENT_NOT_FOUND\)$/m);

    const noToken = await hearth(['server', 'list'], { HEARTH_URL: server.url });
    assert.equal(noToken.code, 64);
    assert.match(noToken.stderr, /hearth: hint: set HEARTH_TOKEN to the admin token \(see <data-dir>\/admin-token/);

    const badToken = await hearth(['server', 'list'], { HEARTH_URL: server.url, HEARTH_TOKEN: 'wrong' });
    assert.equal(badToken.code, 1);
    assert.match(badToken.stderr, /ERR_AUTH_INVALID/);
    assert.match(badToken.stderr, /hint: set HEARTH_TOKEN/);

    const port = await freePort();
    const unreachable = await hearth(['server', 'list'], { HEARTH_URL: `http://127.0.0.1:${port}`, HEARTH_TOKEN: server.token });
    assert.equal(unreachable.code, 69);
    assert.match(unreachable.stderr, /ERR_CONNECTION/);
    assert.match(unreachable.stderr, /HEARTH_URL/);

    for (const args of [
      ['server', 'list', '--bogus'],
      ['deployment', 'wait'],
      ['deployment', 'create', '--server', 'x'],
    ]) {
      const bad = await hearth(args);
      assert.equal(bad.code, 64, `${args.join(' ')}: ${bad.stderr}`);
      assert.match(bad.stderr, /^hearth: /);
    }
  });

  test('bin/hearth.js runs the CLI through tsx', async () => {
    const result = await new Promise<CliResult>((resolve) => {
      const child = spawn(process.execPath, ['packages/cli/bin/hearth.js', '--version'], { cwd: repoRoot, env: cliEnv({}) });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.once('close', (code) => resolve({ code, stdout, stderr: '', durationMs: 0 }));
    });
    assert.equal(result.code, 0);
    assert.equal(result.stdout, '0.1.0\n');
  });
});

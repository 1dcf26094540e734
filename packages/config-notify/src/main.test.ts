// The command: invocation, exit codes, stdin handling, --wait, --drain, --heartbeat, and the bin.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { ExitError } from '@hearth/agent-kit';
import { EXIT_CONFIG, EXIT_INTERNAL } from './exit-codes.ts';
import { EXIT_NOT_QUEUED, main } from './main.ts';
import { parseCommandLine } from './options.ts';
import { deploymentWith, startFake } from './test-support.ts';

const BIN = new URL('../bin/heat-config-notify.js', import.meta.url).pathname;

interface Run {
  code: number;
  log: Array<Record<string, unknown>>;
  stdout: string;
}

function sink(): { stream: Writable; text(): string } {
  let text = '';
  return {
    stream: new Writable({
      write(chunk: Buffer, _e, done) {
        text += chunk.toString('utf8');
        done();
      },
    }),
    text: () => text,
  };
}

async function run(argv: string[], env: Record<string, string>, stdin: Buffer | string = '', stop?: AbortSignal): Promise<Run> {
  const err = sink();
  const out = sink();
  const code = await main(argv, {
    env: { HEARTH_NOTIFY_RETRY_BASE_MS: '20', HEARTH_NOTIFY_RETRY_CAP_MS: '100', ...env },
    stdin: Readable.from([Buffer.from(stdin)]),
    stderr: err.stream,
    stdout: out.stream,
    stop: stop ?? new AbortController().signal,
  });
  const log = err
    .text()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { code, log, stdout: out.text() };
}

function files(
  inputs: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): { env: Record<string, string>; deployment: string; outbox: string } {
  const root = mkdtempSync(join(tmpdir(), 'hcn-main-'));
  const deployment = join(root, 'c1.json');
  writeFileSync(deployment, JSON.stringify(deploymentWith(inputs, extra)));
  const outbox = join(root, 'outbox');
  return { env: { HEARTH_OUTBOX_DIR: outbox }, deployment, outbox };
}

const hearth = (base: string) => ({
  deploy_signal_transport: 'HEARTH_SIGNAL',
  deploy_signal_id: `${base}/v1/guest/deployments/d9/signal?token=tkn`,
  deploy_signal_verb: 'POST',
});

test('a 5 MB stdout with non-UTF-8 bytes signals: body within 1 MiB, valid JSON, the end of stdout kept', async () => {
  const fake = await startFake(() => ({ status: 200, body: '{"status":"COMPLETE","duplicate":false}' }));
  try {
    const { env, deployment, outbox } = files(hearth(fake.url));
    const stdout = Buffer.concat([
      Buffer.from('start '),
      Buffer.alloc(5 * 1024 * 1024, 'y'),
      Buffer.from([0xc3, 0x28, 0xff]),
      Buffer.from(' THE END'),
    ]);
    const stdin = Buffer.concat([
      Buffer.from('{"deploy_stdout":"'),
      stdout,
      Buffer.from('","deploy_stderr":"boom","deploy_status_code":3}'),
    ]);
    const result = await run([deployment], env, stdin);
    assert.equal(result.code, 0, JSON.stringify(result.log));
    assert.equal(fake.requests.length, 1);
    const body = fake.requests[0]!.body;
    assert.ok(body.length <= 1024 * 1024, `${body.length} bytes`);
    const sent = JSON.parse(body.toString('utf8'));
    assert.ok(sent.deploy_stdout.endsWith('y\uFFFD(\uFFFD THE END'), JSON.stringify(sent.deploy_stdout.slice(-20)));
    assert.match(sent.deploy_stdout, /^\[heat-config-notify: the first \d+ bytes were cut/);
    assert.equal(sent.deploy_stderr, 'boom');
    assert.equal(sent.deploy_status_code, 3);
    assert.ok(result.log.some((l) => /not valid UTF-8/.test(String(l.msg))));
    assert.ok(result.log.some((l) => l.msg === 'signal value cut to fit the size limit, its end kept' && l.field === 'deploy_stdout'));
    assert.deepEqual(readdirSync(outbox), [], 'delivered: nothing left queued');
  } finally {
    await fake.close();
  }
});

test('20 000 outputs against a server that answers 413 past 1 MiB: delivered, status code kept, exit 0', async () => {
  const fake = await startFake((request) =>
    request.body.length > 1024 * 1024 ? { status: 413, body: '{"error":{"message":"too large"}}' } : { status: 200, body: '{}' },
  );
  try {
    const { env, deployment, outbox } = files(hearth(fake.url));
    const signal: Record<string, unknown> = { deploy_stdout: 'ok\n', deploy_stderr: '', deploy_status_code: 6 };
    for (let i = 0; i < 20_000; i += 1) signal[`out_${i}`] = 'v'.repeat(60);
    const result = await run([deployment], env, JSON.stringify(signal));
    assert.equal(result.code, 0, JSON.stringify(result.log.filter((l) => l.level !== 'warn')));
    assert.equal(fake.requests.length, 1);
    assert.ok(fake.requests[0]!.body.length <= 1024 * 1024, `${fake.requests[0]!.body.length} bytes`);
    const sent = JSON.parse(fake.requests[0]!.body.toString('utf8'));
    assert.equal(sent.deploy_status_code, 6);
    assert.match(sent.deploy_stderr, /value\(s\) dropped to fit the signal size limit/);
    const warnings = result.log.filter((l) => /to fit the size limit/.test(String(l.msg)));
    assert.equal(warnings.length, 1, 'one summary line, not one per output');
    assert.deepEqual(readdirSync(outbox), []);
  } finally {
    await fake.close();
  }
});

test('a status code hearth-server refuses (a message longer than 64 characters) is sent cut, not lost to a 400', async () => {
  const fake = await startFake((request) => {
    const code = (JSON.parse(request.body.toString('utf8')) as { deploy_status_code?: unknown }).deploy_status_code;
    return typeof code === 'string' && code.length > 64
      ? { status: 400, body: '{"error":{"message":"too long"}}' }
      : { status: 200, body: '{}' };
  });
  try {
    const { env, deployment } = files(hearth(fake.url));
    const message = 'Error: the service failed to start because its port 8080 is already in use by another process';
    const result = await run(
      [deployment],
      env,
      JSON.stringify({ deploy_stdout: '', deploy_stderr: 'boom\n', deploy_status_code: message }),
    );
    assert.equal(result.code, 0, JSON.stringify(result.log));
    const sent = JSON.parse(fake.requests.at(-1)!.body.toString('utf8'));
    assert.equal(sent.deploy_status_code, message.slice(0, 64));
    assert.equal(sent.deploy_stderr, `boom\n[heat-config-notify: deploy_status_code was ${message}]\n`);
  } finally {
    await fake.close();
  }
});

test('server down: the plain invocation queues the signal and exits 0; --drain delivers it later', async () => {
  const fake = await startFake(() => ({ status: 200 }));
  const port = Number(new URL(fake.url).port);
  await fake.close();
  const { env, deployment, outbox } = files(hearth(fake.url));
  const queued = await run([deployment], env, '{"deploy_status_code":0}');
  assert.equal(queued.code, 0);
  assert.equal(readdirSync(outbox).length, 1);
  assert.ok(queued.log.some((l) => l.msg === 'signal queued in the outbox; heat-config-notify --drain will deliver it'));
  const back = await startFake(() => ({ status: 200 }), port);
  try {
    const drained = await run(['--drain'], env);
    assert.equal(drained.code, 0);
    assert.equal(back.requests.length, 1);
    assert.equal(back.requests[0]!.body.toString(), '{"deploy_status_code":0}');
    assert.deepEqual(readdirSync(outbox), []);
  } finally {
    await back.close();
  }
});

test('--drain with outbox entries it cannot read exits 78, naming them, not 0; the readable ones are still delivered', async () => {
  const fake = await startFake(() => ({ status: 200 }));
  const port = Number(new URL(fake.url).port);
  await fake.close();
  const { env, deployment, outbox } = files(hearth(fake.url));
  assert.equal((await run([deployment], env, '{"deploy_status_code":0}')).code, 0, 'queued while the server is down');
  writeFileSync(join(outbox, 'corrupt.json'), '{"version":');
  mkdirSync(join(outbox, 'dir.json'));
  const back = await startFake(() => ({ status: 200 }), port);
  try {
    const drained = await run(['--drain'], env);
    assert.equal(drained.code, EXIT_CONFIG, JSON.stringify(drained.log));
    assert.equal(back.requests.length, 1, 'the readable entry is delivered');
    const named = drained.log.filter((l) => l.msg === 'cannot read an outbox entry; leaving it for an operator').map((l) => l.file);
    assert.deepEqual(named.sort(), [join(outbox, 'corrupt.json'), join(outbox, 'dir.json')]);
    assert.ok(
      drained.log.some(
        (l) => l.level === 'error' && /^2 outbox entries could not be read and were not sent: repair or remove/.test(String(l.msg)),
      ),
    );
    assert.deepEqual(readdirSync(outbox).sort(), ['corrupt.json', 'dir.json'], 'kept for an operator');
  } finally {
    await back.close();
  }
  // Only unreadable entries: the bin's exit status says so too (it was 0: "success", nothing sent).
  const binEnv = { ...process.env };
  delete binEnv.NODE_EXTRA_CA_CERTS;
  const bin = spawnSync(process.execPath, [BIN, '--drain', '--once', '--outbox-dir', outbox, '--log-format', 'text'], {
    encoding: 'utf8',
    env: binEnv,
  });
  assert.equal(bin.status, EXIT_CONFIG, bin.stderr);
  assert.match(bin.stderr, /2 outbox entries could not be read and were not sent/);
  rmSync(join(outbox, 'dir.json'), { recursive: true });
  rmSync(join(outbox, 'corrupt.json'));
  assert.equal((await run(['--drain'], env)).code, 0, 'repaired: 0 again');
});

test('the daemon (--drain --follow) exits 0 when stopped, after a rejected signal and with an unreadable entry left', async () => {
  const fake = await startFake(() => ({ status: 409, body: '{"error":{"message":"not IN_PROGRESS"}}' }));
  const port = Number(new URL(fake.url).port);
  await fake.close();
  const { env, deployment, outbox } = files(hearth(fake.url));
  assert.equal((await run([deployment], env, '{"deploy_status_code":0}')).code, 0, 'queued while the server is down');
  writeFileSync(join(outbox, 'corrupt.json'), '{"version":');
  const back = await startFake(() => ({ status: 409, body: '{"error":{"message":"not IN_PROGRESS"}}' }), port);
  try {
    const stop = new AbortController();
    const daemon = run(['--drain', '--follow'], env, '', stop.signal);
    for (let i = 0; i < 200 && back.requests.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    assert.equal(back.requests.length, 1, 'the daemon sent the queued signal');
    for (let i = 0; i < 200 && readdirSync(outbox).length > 1; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    assert.deepEqual(readdirSync(outbox), ['corrupt.json'], 'the rejected signal was dropped, the unreadable entry kept');
    stop.abort();
    // A stop is not a result: systemctl stop must not leave the unit failed (both were logged as they happened).
    const stopped = await daemon;
    assert.equal(stopped.code, 0, JSON.stringify(stopped.log));
    assert.ok(stopped.log.some((l) => l.msg === 'cannot read an outbox entry; leaving it for an operator'));
  } finally {
    await back.close();
  }
});

test('a rejected signal exits 1 (all transports), logged with the reason; --wait on a dead server exits 1 --late-ms past the deadline', async () => {
  const fake = await startFake(() => ({ status: 409, body: '{"error":{"message":"Deployment d9 is CREATE_COMPLETE, not IN_PROGRESS"}}' }));
  try {
    const { env, deployment } = files({ deploy_signal_id: `${fake.url}/v1/signal/x`, deploy_signal_verb: 'POST' });
    const rejected = await run([deployment], env, '{}');
    assert.equal(rejected.code, 1);
    assert.ok(rejected.log.some((l) => l.level === 'error' && /not IN_PROGRESS/.test(String(l.reason))));
  } finally {
    await fake.close();
  }
  const { env, deployment, outbox } = files(
    { ...hearth('http://127.0.0.1:9'), deploy_timeout: 1 },
    { creation_time: new Date(Date.now() - 500).toISOString() },
  );
  const started = Date.now();
  const waited = await run(['--wait', '--late-ms', '600', deployment], env, '{}');
  assert.equal(waited.code, 1);
  assert.ok(Date.now() - started >= 1000, 'kept retrying until --late-ms past the deadline');
  assert.ok(waited.log.some((l) => l.msg === 'dropping a signal that was never acknowledged: the deployment deadline has passed'));
  assert.deepEqual(readdirSync(outbox), []);
});

test('--wait exits 0 once delivered after failures', async () => {
  const fake = await startFake((_r, i) => (i < 3 ? { status: 500 } : { status: 200 }));
  try {
    const { env, deployment } = files(hearth(fake.url));
    const result = await run(['--wait', deployment], env, '{}');
    assert.equal(result.code, 0);
    assert.equal(fake.requests.length, 4);
  } finally {
    await fake.close();
  }
});

test('NO_SIGNAL exits 0 and queues nothing; ZAQAR_SIGNAL is exit 1 saying it is not supported', async () => {
  const none = files({ deploy_signal_transport: 'NO_SIGNAL' });
  const result = await run([none.deployment], none.env, '{}');
  assert.equal(result.code, 0);
  assert.ok(result.log.some((l) => /NO_SIGNAL/.test(String(l.msg))));
  const zaqar = files({ deploy_signal_transport: 'ZAQAR_SIGNAL', deploy_queue_id: 'q', deploy_auth_url: 'http://127.0.0.1:9/v3' });
  await assert.rejects(
    run([zaqar.deployment], zaqar.env, '{}'),
    (e: unknown) => e instanceof ExitError && e.exitCode === 1 && /ZAQAR_SIGNAL/.test(e.message),
  );
});

test('an outbox that cannot be written is exit 75 (hand it over again), not 1 (refused for good); nothing is sent', async () => {
  const fake = await startFake(() => ({ status: 200, body: '{}' }));
  try {
    const { env, deployment, outbox } = files(hearth(fake.url));
    writeFileSync(outbox, 'a file where the outbox dir should be'); // as a full or read-only disk: the entry cannot be written
    await assert.rejects(
      run([deployment], env, '{"deploy_status_code": 0}'),
      (e: unknown) =>
        e instanceof ExitError &&
        e.exitCode === EXIT_NOT_QUEUED &&
        e.message.includes(`in the outbox ${outbox}: EEXIST`) &&
        /could not queue the signal of deployment c0ffee00-/.test(e.message) &&
        !e.message.includes('tkn'),
    );
    assert.equal(fake.requests.length, 0);
  } finally {
    await fake.close();
  }
});

test('--heartbeat posts to the heartbeat URL with the signal token; other transports are a no-op; failures exit 1', async () => {
  const fake = await startFake((r) =>
    r.url.includes('/d9/')
      ? { status: 200, body: '{"deployment_id":"d9","deadline":"2030-01-01T00:00:00Z"}' }
      : { status: 409, body: '{"error":{"message":"not in progress"}}' },
  );
  try {
    const { env, deployment } = files(hearth(fake.url));
    const sent = await run(['--heartbeat', '--progress', '40', deployment, 'step', '2'], env);
    assert.equal(sent.code, 0);
    assert.equal(fake.requests[0]!.url, '/v1/guest/deployments/d9/heartbeat?token=tkn');
    assert.deepEqual(JSON.parse(fake.requests[0]!.body.toString()), { message: 'step 2', progress: 40 });

    const done = files({ ...hearth(fake.url), deploy_signal_id: `${fake.url}/v1/guest/deployments/d8/signal?token=tkn` });
    const refused = await run(['--heartbeat', done.deployment, 'late'], done.env);
    assert.equal(refused.code, 1);
    assert.ok(refused.log.some((l) => l.msg === 'heartbeat not sent' && /409: not in progress/.test(String(l.reason))));

    const cfn = files({ deploy_signal_id: `${fake.url}/v1/signal/arn`, deploy_signal_verb: 'POST' });
    assert.equal((await run(['--heartbeat', cfn.deployment, 'x'], cfn.env)).code, 0);
    const zaqar = files({ deploy_queue_id: 'q' });
    assert.equal((await run(['--heartbeat', zaqar.deployment], zaqar.env)).code, 0);
    assert.equal(fake.requests.length, 2, 'no request for transports without heartbeats');
  } finally {
    await fake.close();
  }
});

test('an unexpected error (stdin failing) is exit 70, never the 1 of a refused signal', async () => {
  const { env, deployment } = files(hearth('http://127.0.0.1:9'));
  const failingStdin = new Readable({
    read() {
      this.destroy(new Error('EIO: i/o error, read'));
    },
  });
  await assert.rejects(
    main([deployment], { env, stdin: failingStdin, stderr: sink().stream, stdout: sink().stream, stop: new AbortController().signal }),
    (e: unknown) =>
      e instanceof ExitError &&
      e.exitCode === EXIT_INTERNAL &&
      /internal error: EIO: i\/o error, read; .*hand it over again/.test(e.message),
  );
  // A drain queues nothing: its message says what becomes of the queued signals instead.
  const { outbox } = files(hearth('http://127.0.0.1:9'));
  writeFileSync(outbox, 'a file where the outbox dir should be');
  await assert.rejects(
    main(['--drain', '--once', '--outbox-dir', outbox], {
      env,
      stderr: sink().stream,
      stdout: sink().stream,
      stop: new AbortController().signal,
    }),
    (e: unknown) =>
      e instanceof ExitError &&
      e.exitCode === EXIT_INTERNAL &&
      /^internal error: .*; the queued signals stay in the outbox: fix the cause and drain again$/.test(e.message) &&
      !e.message.includes('may not be queued'),
  );
});

test('usage and configuration errors are exit 78 (EX_CONFIG, never the 1 of a refusal), naming the flag or env var', () => {
  const fails = (argv: string[], pattern: RegExp, env: NodeJS.ProcessEnv = {}) =>
    assert.throws(
      () => parseCommandLine(argv, env),
      (e: unknown) => e instanceof ExitError && e.exitCode === EXIT_CONFIG && pattern.test(e.message),
    );
  fails([], /no deployment file given/);
  fails(['a.json', 'b.json'], /one deployment file expected/);
  fails(['--drain', 'a.json'], /--drain takes no arguments/);
  fails(['--once', 'a.json'], /--once and --follow go with --drain/);
  fails(['--drain', '--once', '--follow'], /cannot be combined/);
  fails(['--heartbeat', '--progress', '120', 'a.json'], /--progress must be a number from 0 to 100/);
  fails(['--retry-base-ms', 'soon', 'a.json'], /--retry-base-ms must be a positive whole number/);
  fails(['--bogus'], /Unknown option '--bogus'/);
  fails(['a.json'], /^\$HEARTH_NOTIFY_TIMEOUT_MS must be a positive whole number, not "30s"/, { HEARTH_NOTIFY_TIMEOUT_MS: '30s' });
  fails(['a.json'], /^\$HEARTH_NOTIFY_MAX_BODY_BYTES must be/, { HEARTH_NOTIFY_MAX_BODY_BYTES: '1MiB' });
  fails(['a.json'], /^\$HEARTH_LOG_FORMAT must be json or text, not "txt"/, { HEARTH_LOG_FORMAT: 'txt' });
  fails(['--timeout-ms', '0', 'a.json'], /^--timeout-ms must be/, { HEARTH_NOTIFY_TIMEOUT_MS: '5' });
  fails(['--drain', '--outbox-dir', ''], /^--outbox-dir must name a directory, not ""$/);
  fails(['--outbox-dir', ' ', 'a.json'], /^--outbox-dir must name a directory, not " "$/);
  const parsed = parseCommandLine(['--drain', '--follow'], { HEARTH_ROOT: '/tmp/r', HEARTH_NOTIFY_RETRY_CAP_MS: '5000' });
  assert.equal(parsed.action, 'drain');
  assert.ok(parsed.action === 'drain' && parsed.mode === 'follow');
  assert.equal(parsed.action === 'drain' && parsed.options.outboxDir, '/tmp/r/var/lib/hearth/outbox');
  assert.deepEqual(parsed.action === 'drain' && parsed.options.backoff, { baseMs: 1000, capMs: 5000 });
});

test('the bin: no argument, a mistyped env value or an unreadable deployment file exit 78, not 1; --help exits 0', () => {
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  const bare = spawnSync(process.execPath, [BIN], { encoding: 'utf8', env });
  assert.equal(bare.status, EXIT_CONFIG);
  assert.match(bare.stderr, /heat-config-notify: no deployment file given/);
  const { deployment, outbox } = files(hearth('http://127.0.0.1:9'));
  const typo = spawnSync(process.execPath, [BIN, deployment], {
    encoding: 'utf8',
    env: { ...env, HEARTH_OUTBOX_DIR: outbox, HEARTH_NOTIFY_RETRY_BASE_MS: '1s' },
    input: '{"deploy_status_code":0}',
  });
  assert.equal(typo.status, EXIT_CONFIG, typo.stderr);
  assert.match(typo.stderr, /\$HEARTH_NOTIFY_RETRY_BASE_MS must be a positive whole number, not "1s"/);
  assert.equal(existsSync(outbox), false, 'nothing queued');
  const unreadable = spawnSync(process.execPath, [BIN, join(outbox, 'missing.json')], {
    encoding: 'utf8',
    env: { ...env, HEARTH_OUTBOX_DIR: outbox },
    input: '{}',
  });
  assert.equal(unreadable.status, EXIT_CONFIG, unreadable.stderr);
  assert.match(unreadable.stderr, /cannot read the deployment file .*missing\.json/);
  const help = spawnSync(process.execPath, [BIN, '--help'], { encoding: 'utf8', env });
  assert.equal(help.status, 0);
  assert.match(help.stdout, /heat-config-notify \[--wait\] DEPLOYMENT\.json < signal\.json/);
});

test('a result cut short on stdin (its writer killed mid-write) is exit 75 and sends nothing, never {}; the whole one is delivered', async (t) => {
  // {} is what the original signals for input that is not JSON, and the server takes it for a success without outputs.
  const fake = await startFake(() => ({ status: 200, body: '{"status":"COMPLETE","duplicate":false}' }));
  t.after(() => fake.close());
  const { env, deployment, outbox } = files(hearth(fake.url));
  const written = join(outbox, '..', 'written');
  const part = join(outbox, '..', 'part');
  const whole = JSON.stringify({ deploy_status_code: 0, deploy_stdout: 'x'.repeat(300_000), result: 'whole' });
  writeFileSync(part, whole.slice(0, 200_000));
  // A dispatcher piping the result (as 55-heat-config does) that dies after writing part of it.
  const fs = "require('node:fs')";
  const writerCode = `process.stdout.write(${fs}.readFileSync(${JSON.stringify(part)}), () => { ${fs}.writeFileSync(${JSON.stringify(written)}, ''); setInterval(() => {}, 1000); });`;
  const writer = spawn(process.execPath, ['-e', writerCode], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => writer.kill('SIGKILL'));
  const notify = spawn(process.execPath, [BIN, deployment], { env: { ...process.env, ...env }, stdio: [writer.stdout, 'ignore', 'pipe'] });
  let stderr = '';
  notify.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => notify.on('close', (code) => resolve(code)));
  for (let i = 0; i < 300 && !existsSync(written); i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(existsSync(written), 'the writer wrote its part');
  writer.kill('SIGKILL');
  assert.equal(await exited, EXIT_NOT_QUEUED, stderr);
  assert.match(stderr, /ends inside its JSON after 200000 bytes: it was cut short .*nothing was queued or sent/);
  assert.equal(fake.requests.length, 0, 'nothing signalled');
  assert.deepEqual(existsSync(outbox) ? readdirSync(outbox) : [], [], 'nothing queued');
  // Handed over again whole, it is delivered with its outputs.
  const again = await run([deployment], env, whole);
  assert.equal(again.code, 0);
  assert.equal(fake.requests.length, 1);
  assert.equal((JSON.parse(fake.requests[0]!.body.toString()) as { result: string }).result, 'whole');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SoftwareConfigCreate, SoftwareDeployment } from '@hearth/protocol';
import { HearthApiError } from '@hearth/client';
import type { Command } from 'commander';
import { processIo } from './io.ts';
import { buildProgram } from './program.ts';
import { runFake } from './test-support.ts';

/** Ids in the UUID form the server gives configs and deployments. */
const D1 = 'd1d1d1d1-0000-4000-8000-000000000001';
const C1 = 'c1c1c1c1-0000-4000-8000-000000000001';

/** A deployment with only the fields the commands under test read (hence the cast). */
const deployment = (status: string): SoftwareDeployment =>
  ({ id: D1, status, status_reason: `${status} reason`, output_values: { out: 'v', n: 1 } }) as unknown as SoftwareDeployment;

test('--help exits 0 and lists every command group', async () => {
  const result = await runFake(['--help']);
  assert.equal(result.code, 0);
  for (const word of ['server', 'config', 'deployment', 'events', 'HEARTH_TOKEN', '69']) assert.match(result.stdout, new RegExp(word));
});

test('--help of every command exits 0 and names the environment variables and exit codes', async () => {
  const program = buildProgram({ io: processIo(), createClient: () => assert.fail('no client for --help') });
  const paths: string[][] = [];
  const walk = (command: Command, path: string[]): void => {
    paths.push(path);
    for (const sub of command.commands) walk(sub, [...path, sub.name()]);
  };
  walk(program, []);
  assert.ok(paths.length > 40, `${paths.length} commands`);
  for (const path of paths) {
    const result = await runFake([...path, '--help']);
    assert.equal(result.code, 0, path.join(' '));
    for (const word of [
      'HEARTH_URL',
      'HEARTH_TOKEN',
      'HEARTH_PROJECT',
      'Exit codes:',
      '64  usage error',
      '69  hearth-server unreachable',
    ]) {
      assert.ok(result.stdout.includes(word), `hearth ${path.join(' ')} --help lacks ${word}`);
    }
  }
});

test('bad flags exit 64 with a hearth: message and no client call', async () => {
  for (const argv of [
    ['server', 'list', '--bogus'],
    ['config', 'create', 'c1', '--config', 'x'],
    ['deployment', 'create', '--config', 'c'],
    ['server', 'show'],
    ['deployment', 'wait', D1, '--timeout', 'soon'],
    ['config', 'create', 'c1', '--group', 'script'],
    ['deployment', 'update', D1],
    ['nonsense'],
  ]) {
    const result = await runFake(argv);
    assert.equal(result.code, 64, `${argv.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, /^hearth: /, argv.join(' '));
    assert.deepEqual(result.calls, [], argv.join(' '));
  }
});

test("a misspelt command or flag is one hearth: line, with commander's suggestion as the hint", async () => {
  for (const [argv, wrong, suggestion] of [
    [['stak', 'list'], "unknown command 'stak'", 'stack'],
    [['deployment', 'crate'], "unknown command 'crate'", 'create'],
    [['server', 'list', '--jsno'], "unknown option '--jsno'", '--json'],
  ] as const) {
    const result = await runFake([...argv]);
    assert.equal(result.code, 64, argv.join(' '));
    assert.equal(
      result.stderr,
      `hearth: ${wrong} (ERR_USAGE)\nhearth: hint: did you mean ${suggestion}? Or run the command with --help to see its usage\n`,
    );
  }
});

test('a missing token exits 64 with the HEARTH_TOKEN hint', async () => {
  const result = await runFake(['server', 'list'], { listServers: async () => [] }, {});
  assert.equal(result.code, 64);
  assert.match(result.stderr, /hearth: no admin token given \(ERR_AUTH_MISSING\)\nhearth: hint: set HEARTH_TOKEN to the admin token/);
});

test('global flags reach the client from before or after the command; env fills the rest', async () => {
  const result = await runFake(
    ['server', 'list', '--url', 'http://127.0.0.1:9/', '--json'],
    { listServers: async () => [] },
    {
      HEARTH_TOKEN: 'admin',
      HEARTH_PROJECT: 'p7',
    },
  );
  assert.equal(result.code, 0);
  assert.deepEqual(result.clientOptions, [{ url: 'http://127.0.0.1:9', token: 'admin', project: 'p7' }]);
  assert.deepEqual(JSON.parse(result.stdout), { servers: [] });
});

test('config create sends inputs, typed defaults, outputs and options read from files', async () => {
  const files = {
    'run.sh': '#!/bin/sh\necho hi\n',
    'def.yaml': 'inputs:\n  - name: greeting\n    default: hello\noutputs:\n  - name: result\n',
    'opts.json': '{"retries": 2}',
  };
  const result = await runFake(
    [
      'config',
      'create',
      'c1',
      '--group',
      'script',
      '--config-file',
      'run.sh',
      '--definition-file',
      'def.yaml',
      '--input',
      'port=80',
      '--input-type',
      'port=Number',
      '--error-output',
      'oops',
      '--options-file',
      'opts.json',
      '--json',
    ],
    { createConfig: async (body: SoftwareConfigCreate) => ({ id: 'c-1', ...body }) },
    { HEARTH_TOKEN: 'admin' },
    files,
  );
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(result.calls[0]?.[1][0], {
    name: 'c1',
    group: 'script',
    config: '#!/bin/sh\necho hi\n',
    inputs: [
      { name: 'greeting', default: 'hello' },
      { name: 'port', type: 'Number', default: 80 },
    ],
    outputs: [{ name: 'result' }, { name: 'oops', error_output: true }],
    options: { retries: 2 },
  });
});

test('config create reports unreadable and unparsable files as usage errors', async () => {
  const missing = await runFake(['config', 'create', 'c', '--group', 'g', '--config-file', 'nope.sh']);
  assert.equal(missing.code, 64);
  assert.match(missing.stderr, /--config-file nope\.sh: cannot read it \(ENOENT\)/);
  const bad = await runFake(
    ['config', 'create', 'c', '--group', 'g', '--config', 'x', '--options-file', 'o.yaml'],
    {},
    { HEARTH_TOKEN: 'a' },
    {
      'o.yaml': 'a: [1',
    },
  );
  assert.equal(bad.code, 64);
  assert.match(bad.stderr, /--options-file o\.yaml is neither JSON nor YAML/);
  const notMap = await runFake(
    ['config', 'create', 'c', '--group', 'g', '--config', 'x', '--options-file', 'o.yaml'],
    {},
    { HEARTH_TOKEN: 'a' },
    {
      'o.yaml': '- 1\n- 2\n',
    },
  );
  assert.match(notMap.stderr, /must hold a mapping/);
  const untyped = await runFake(['config', 'create', 'c', '--group', 'g', '--config', 'x', '--input-type', 'p=Number']);
  assert.match(untyped.stderr, /--input-type p=Number names no input/);
});

test('deployment create maps flags to the request body', async () => {
  const result = await runFake(
    [
      'deployment',
      'create',
      '--config',
      C1,
      '--server',
      's1',
      '--input',
      'a=1',
      '--input',
      'b:=true',
      '--action',
      'update',
      '--timeout',
      '60',
      '--name',
      'n',
      '--no-signal',
      '--json',
    ],
    { createDeployment: async () => deployment('COMPLETE') },
  );
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(result.calls[0]?.[1][0], {
    config_id: C1,
    server_id: 's1',
    input_values: { a: '1', b: true },
    action: 'UPDATE',
    timeout: 60,
    name: 'n',
    signal_transport: 'NO_SIGNAL',
  });
});

test('deployment update merges new inputs over the current ones, writing with If-Match the ETag it read', async () => {
  const result = await runFake(['deployment', 'update', D1, '--input', 'b=2'], {
    readDeployment: async () => ({ deployment: { ...deployment('COMPLETE'), input_values: { a: '1', b: '1' } }, etag: '"v1"' }),
    updateDeployment: async () => deployment('IN_PROGRESS'),
  });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(result.calls[1], ['updateDeployment', [D1, { input_values: { a: '1', b: '2' } }, { ifMatch: '"v1"' }]]);
});

// Another operator's update (or a signal) between the read and the write is a 412: read and merge again.
test('deployment update --input reads again after a 412, and gives up with the error after 5 tries', async () => {
  const changed = () =>
    new HearthApiError({
      method: 'PUT',
      url: '/v1/default/software_deployments/x',
      status: 412,
      code: 'ERR_DEPLOYMENT_CHANGED',
      message: 'Software deployment x has changed since it was read: read it again and retry.',
    });
  let reads = 0;
  let writes = 0;
  const retried = await runFake(['deployment', 'update', D1, '--input', 'b=2', '--action', 'update'], {
    readDeployment: async () => {
      reads++;
      return { deployment: { ...deployment('COMPLETE'), input_values: { a: String(reads) } }, etag: `"v${reads}"` };
    },
    updateDeployment: async () => {
      if (++writes === 1) throw changed();
      return deployment('IN_PROGRESS');
    },
  });
  assert.equal(retried.code, 0, retried.stderr);
  assert.deepEqual(retried.calls.at(-1), [
    'updateDeployment',
    [D1, { action: 'UPDATE', input_values: { a: '2', b: '2' } }, { ifMatch: '"v2"' }],
  ]);

  const gaveUp = await runFake(['deployment', 'update', D1, '--input', 'b=2'], {
    readDeployment: async () => ({ deployment: deployment('COMPLETE'), etag: '"v"' }),
    updateDeployment: async () => {
      throw changed();
    },
  });
  assert.equal(gaveUp.code, 1);
  assert.equal(gaveUp.calls.filter(([name]) => name === 'updateDeployment').length, 5);
  assert.match(gaveUp.stderr, /ERR_DEPLOYMENT_CHANGED|has changed since it was read/);
});

test('deployment wait exits 0 on COMPLETE, 1 on FAILED, with the final JSON alone on stdout', async () => {
  const complete = await runFake(['deployment', 'wait', D1, '--json'], { getDeployment: async () => deployment('COMPLETE') });
  assert.equal(complete.code, 0);
  assert.equal(JSON.parse(complete.stdout).software_deployment.status, 'COMPLETE');
  assert.match(complete.stderr, /^deployment d1d1d1d1-0000-4000-8000-000000000001: COMPLETE after 0 s\n$/);
  const failed = await runFake(['deployment', 'wait', D1], { getDeployment: async () => deployment('FAILED') });
  assert.equal(failed.code, 1);
  assert.match(failed.stderr, /hearth: deployment d1d1d1d1-0000-4000-8000-000000000001 FAILED: FAILED reason/);
});

test('deployment wait exits 2 when its own --timeout passes', async () => {
  const result = await runFake(['deployment', 'wait', D1, '--timeout', '1'], {
    getDeployment: async () => deployment('IN_PROGRESS'),
    waitDeployment: async () => {
      await new Promise((resolve) => setTimeout(resolve, 1100));
      return deployment('IN_PROGRESS');
    },
  });
  assert.equal(result.code, 2);
  assert.match(result.stderr, /deployment d1d1d1d1-0000-4000-8000-000000000001: IN_PROGRESS, 0 s elapsed/);
  assert.match(result.stderr, /hearth: deployment d1d1d1d1-0000-4000-8000-000000000001 is still IN_PROGRESS after 1 s \(--timeout\)/);
});

test('deployment output prints one value raw, all as JSON, and fails on an unknown name', async () => {
  const methods = { getDeployment: async () => deployment('COMPLETE') };
  assert.equal((await runFake(['deployment', 'output', D1, 'out'], methods)).stdout, 'v\n');
  assert.equal((await runFake(['deployment', 'output', D1, 'n'], methods)).stdout, '1\n');
  assert.deepEqual(JSON.parse((await runFake(['deployment', 'output', D1], methods)).stdout), { out: 'v', n: 1 });
  assert.equal((await runFake(['deployment', 'output', D1, 'out', '--json'], methods)).stdout, '"v"\n');
  const unknown = await runFake(['deployment', 'output', D1, 'zz'], methods);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /has no output "zz" \(ERR_OUTPUT_NOT_FOUND\)\nhearth: hint: its outputs are: out, n/);
});

test('a malformed config or deployment id is a usage error, before any request, saying how to find ids', async () => {
  const cases: Array<[string[], string]> = [
    [['config', 'show', 'nope'], 'config'],
    [['config', 'delete', 'nope'], 'config'],
    [['deployment', 'show', 'nope'], 'deployment'],
    [['deployment', 'update', 'nope', '--action', 'update'], 'deployment'],
    [['deployment', 'delete', 'nope'], 'deployment'],
    [['deployment', 'output', 'nope'], 'deployment'],
    [['deployment', 'wait', 'nope'], 'deployment'],
    [['deployment', 'timeline', 'nope'], 'deployment'],
  ];
  for (const [argv, kind] of cases) {
    const result = await runFake(argv);
    assert.equal(result.code, 64, `${argv.join(' ')}: ${result.stderr}`);
    assert.equal(
      result.stderr,
      `hearth: "nope" is not a valid ${kind} id: ${kind} ids are UUIDs (8-4-4-4-12 hex digits) (ERR_USAGE)\n` +
        `hearth: hint: see the ${kind}s and their ids with \`hearth ${kind} list\`\n`,
      argv.join(' '),
    );
    assert.deepEqual(result.calls, [], argv.join(' '));
  }
  const create = await runFake(['deployment', 'create', '--config', 'nope', '--server', 's1']);
  assert.equal(create.code, 64);
  assert.match(create.stderr, /^hearth: --config "nope" is not a valid config id/);
  assert.deepEqual(create.calls, []);
});

test('a token that cannot be sent in a header is a usage error, not "cannot reach hearth-server"', async () => {
  for (const [argv, env, name] of [
    [['stack', 'list', '--token', 't\nx'], {}, '--token'],
    [['stack', 'list'], { HEARTH_TOKEN: 'ad\rmin' }, 'HEARTH_TOKEN'],
  ] as const) {
    const result = await runFake([...argv], { listStacks: async () => [] }, { ...env });
    assert.equal(result.code, 64, result.stderr);
    assert.match(
      result.stderr,
      new RegExp(`^hearth: ${name} has a (line feed|carriage return) at character \\d; a token is printable ASCII`),
    );
    assert.deepEqual(result.clientOptions, [], 'no client, no request');
  }
});

test('events --follow --limit is a usage error', async () => {
  const result = await runFake(['events', '--follow', '--limit', '5'], { streamEvents: () => [] });
  assert.equal(result.code, 64);
  assert.match(result.stderr, /^hearth: --limit does not go with --follow/);
  assert.deepEqual(result.calls, []);
});

test('metrics put refused for the admin token hints at the agent credential it needs', async () => {
  const result = await runFake(['metrics', 'put', 'CPU', '5'], {
    putMetrics: async () => {
      throw new HearthApiError({
        method: 'POST',
        url: 'http://127.0.0.1:8000/v1/guest/metrics',
        credential: 'agent',
        status: 403,
        code: 'ERR_AUTH_FORBIDDEN',
        message: "metrics are sent with a server's agent credential, not the operator token",
      });
    },
  });
  assert.equal(result.code, 1);
  assert.match(result.stderr, /hearth: hint: this command sends a server's agent credential token/);
  assert.doesNotMatch(result.stderr, /use the admin token/);
});

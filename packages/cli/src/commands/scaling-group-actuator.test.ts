// `hearth scaling-group show` says how many members no delivery carried (their delivery failed for
// good), and `update --actuator-url` points the group at a fixed actuator, which then gets them.
// A real hearth-server and a real receiver, both on 127.0.0.1.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ActuatorWebhook } from '@hearth/protocol';
import { createClient } from '@hearth/client';
import { startServer, type TestServer } from '../../../../test/helpers/server.ts';
import { describeError } from '../error-report.ts';
import type { CliIo } from '../io.ts';
import { buildProgram } from '../program.ts';
import { buildScalingGroupUpdate } from './scaling-group.ts';

let server: TestServer;
let receiver: Server;
const hooks: Array<{ path: string; hook: ActuatorWebhook }> = [];
let base = '';
before(async () => {
  server = await startServer();
  await createClient({ url: server.url, token: server.token }).createStack({ stack_name: 'web' });
  // /broken answers a redirect (a final failure), /fixed a 200.
  receiver = createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    request.on('end', () => {
      hooks.push({ path: request.url ?? '', hook: JSON.parse(raw) as ActuatorWebhook });
      if (request.url === '/broken') response.writeHead(302, { location: 'http://127.0.0.1:9/' }).end();
      else response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
after(async () => {
  await server.close();
  receiver.close();
});

/** Runs `hearth` in-process; returns exit code and output. */
async function hearth(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = { code: 0, stdout: '', stderr: '' };
  const io: CliIo = {
    stdout: { write: (text) => void (out.stdout += text) },
    stderr: { write: (text) => void (out.stderr += text) },
    env: { HEARTH_TOKEN: server.token, HEARTH_URL: server.url },
    readTextFile: async () => '',
    now: () => Date.now(),
  };
  try {
    await buildProgram({ io, createClient }).parseAsync(argv, { from: 'user' });
  } catch (error) {
    const report = describeError(error, { url: server.url });
    out.code = report.exitCode;
    for (const line of report.lines) out.stderr += `${line}\n`;
  }
  return out;
}

/** Runs `hearth scaling-group show` until its output matches (at most 10 s). */
async function showUntil(pattern: RegExp): Promise<string> {
  let shown = '';
  for (let i = 0; i < 200 && !pattern.test(shown); i++) {
    shown = (await hearth(['scaling-group', 'show', 'workers', '--stack', 'web'])).stdout;
    if (!pattern.test(shown)) await new Promise((r) => setTimeout(r, 50));
  }
  assert.match(shown, pattern);
  return shown;
}

test('--actuator-url and --actuator-secret become the PATCH body, checked as at create', () => {
  assert.deepEqual(buildScalingGroupUpdate({ stack: 'web', actuatorUrl: 'http://127.0.0.1:1/x' }), {
    actuator: { url: 'http://127.0.0.1:1/x' },
  });
  assert.deepEqual(buildScalingGroupUpdate({ stack: 'web', actuatorSecret: 's'.repeat(16) }), { actuator: { secret: 's'.repeat(16) } });
  assert.throws(() => buildScalingGroupUpdate({ stack: 'web', actuatorUrl: 'http://u:p@127.0.0.1:1/x' }), /must not carry a user/);
});

test('show counts the undelivered members; update --actuator-url sends them to the new URL', async () => {
  const created = await hearth([
    'scaling-group',
    'create',
    'workers',
    '--stack',
    'web',
    '--min-size',
    '2',
    '--max-size',
    '3',
    '--member-bootstrap',
    '--actuator-url',
    `${base}/broken`,
  ]);
  assert.equal(created.code, 0, created.stderr);
  const failed = await showUntil(/^deliveries: +0 pending \(1 failing\), 0 delivered$/m);
  assert.match(failed, /^undelivered_members: +2 \(no delivery carried their credentials yet/m);
  const listed = await hearth(['scaling-group', 'list', '--stack', 'web']);
  assert.match(listed.stdout, /PENDING +UNDELIVERED/);
  assert.match(listed.stdout, /workers +2 +2 +2-3 +0 +2 /);

  const updated = await hearth(['scaling-group', 'update', 'workers', '--stack', 'web', '--actuator-url', `${base}/fixed`]);
  assert.equal(updated.code, 0, updated.stderr);
  assert.match(updated.stdout, new RegExp(`^actuator: +${base}/fixed$`, 'm'));
  await showUntil(/^undelivered_members: +0$/m);
  const fixed = hooks.filter((h) => h.path === '/fixed');
  assert.equal(fixed.length, 1);
  assert.equal(fixed[0]!.hook.new_members.length, 2);
  assert.ok(fixed[0]!.hook.new_members.every((m) => m.credential !== null));
});

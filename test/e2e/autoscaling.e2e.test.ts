import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ActuatorWebhook, ScalingGroup, ScalingPolicy } from '@hearth/protocol';
import { freePort, removeServerData, spawnServer, type ServerProcess } from '../helpers/server.ts';

const SECRET = 'provisioner-secret-0123456789';

/** The provisioner's side: a loopback receiver that checks the signature as any receiver would, on a fixed port it can leave and rejoin. */
class Actuator {
  readonly received: Array<{ body: ActuatorWebhook; headers: IncomingHttpHeaders }> = [];
  readonly badSignatures: string[] = [];
  private server: Server | undefined;
  constructor(readonly port: number) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/scale`;
  }

  async up(): Promise<void> {
    this.server = createServer((request, response) => {
      let raw = '';
      request.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
      request.on('end', () => {
        const timestamp = String(request.headers['x-hearth-timestamp']);
        const expected = `sha256=${createHmac('sha256', SECRET).update(`${timestamp}.${raw}`).digest('hex')}`;
        if (request.headers['x-hearth-signature'] !== expected) {
          this.badSignatures.push(raw);
          response.writeHead(401).end();
          return;
        }
        this.received.push({ body: JSON.parse(raw) as ActuatorWebhook, headers: request.headers });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function api(server: ServerProcess) {
  return async <T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const response = await fetch(`${server.url}/v1/default${path}`, {
      method,
      headers: { 'x-auth-token': server.token },
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { 'x-auth-token': server.token, 'content-type': 'application/json' } }),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : null) as T };
  };
}

const alertmanager = (status: 'firing' | 'resolved') =>
  JSON.stringify({
    version: '4',
    groupKey: '{}:{alertname="HighCPU"}',
    status,
    receiver: 'hearth',
    groupLabels: { alertname: 'HighCPU' },
    commonLabels: { alertname: 'HighCPU', severity: 'warning' },
    commonAnnotations: { summary: 'cpu above 80%' },
    externalURL: 'http://127.0.0.1:9093',
    alerts: [{ status, labels: { alertname: 'HighCPU', instance: 'web-1' }, annotations: {}, startsAt: new Date().toISOString() }],
  });

/** What Alertmanager does: POST its JSON to the webhook URL. */
const alarm = (url: string, status: 'firing' | 'resolved' = 'firing') =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: alertmanager(status) });

test('Alertmanager → alarm_url → group 1 → 2 with a signed webhook; cooldown, max_size, resolved and a revoked URL change nothing', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-e2e-scaling-'));
  const server = await spawnServer(dataDir, await freePort());
  const actuator = new Actuator(await freePort());
  await actuator.up();
  const call = api(server);
  try {
    assert.equal((await call('POST', '/stacks', { stack_name: 'web' })).status, 201);
    const group = await call<{ scaling_group: ScalingGroup }>('POST', '/stacks/web/scaling_groups', {
      name: 'workers',
      min_size: 1,
      max_size: 2,
      cooldown: 3,
      actuator: { url: actuator.url, secret: SECRET },
    });
    assert.equal(group.status, 201, JSON.stringify(group.body));
    const created = await call<{ scaling_policy: ScalingPolicy }>('POST', '/stacks/web/scaling_policies', {
      name: 'scale_up',
      group: 'workers',
      adjustment_type: 'change_in_capacity',
      scaling_adjustment: 1,
    });
    assert.equal(created.status, 201);
    const alarmUrl = created.body.scaling_policy.alarm_url!;
    await until('the initial capacity webhook', () => actuator.received.length === 1);
    assert.equal(actuator.received[0]!.body.desired_capacity, 1);

    const show = async () => (await call<{ scaling_group: ScalingGroup }>('GET', '/stacks/web/scaling_groups/workers')).body.scaling_group;

    // Firing: 1 → 2, and the provisioner hears of it, signed.
    assert.equal((await alarm(alarmUrl)).status, 200);
    assert.equal((await show()).desired_capacity, 2);
    await until('the scale-up webhook', () => actuator.received.length === 2);
    const hook = actuator.received[1]!;
    assert.equal(hook.body.previous_capacity, 1);
    assert.equal(hook.body.desired_capacity, 2);
    assert.equal(hook.body.group.name, 'workers');
    assert.match(hook.body.reason, /policy scale_up: alertmanager: HighCPU firing/);
    assert.equal(hook.headers['x-hearth-event'], 'scaling.desired_capacity');
    assert.equal(hook.headers['x-hearth-delivery'], hook.body.delivery_id);
    assert.deepEqual(actuator.badSignatures, []);

    // Inside the cooldown: acknowledged, recorded with its reason, nothing changes.
    assert.equal((await alarm(alarmUrl)).status, 200);
    assert.equal((await show()).desired_capacity, 2);
    const events = await call<{ events: Array<{ type: string; message: string }> }>('GET', '/events?type=scaling_group.cooldown');
    assert.equal(events.body.events.length, 1);
    assert.match(events.body.events[0]!.message, /in cooldown until/);

    // Resolved: recorded, does nothing.
    assert.equal((await alarm(alarmUrl, 'resolved')).status, 200);
    const ignored = await call<{ events: Array<{ message: string }> }>('GET', '/events?type=scaling_policy.signal_ignored');
    assert.match(ignored.body.events[0]!.message, /HighCPU resolved .*not acted on/);

    // After the cooldown: 2 + 1 stops at max_size 2.
    await until('the cooldown to end', async () => (await show()).cooldown_end === null, 10_000);
    assert.equal((await alarm(alarmUrl)).status, 200);
    const atMax = await show();
    assert.equal(atMax.desired_capacity, 2);
    const policy = (await call<{ scaling_policy: ScalingPolicy }>('GET', '/stacks/web/scaling_policies/scale_up')).body.scaling_policy;
    assert.equal(policy.last_signal?.outcome, 'no_change');

    // Revoked: 403, and still nothing changes.
    assert.equal((await call('POST', '/stacks/web/scaling_policies/scale_up/revoke')).status, 200);
    const refused = await alarm(alarmUrl);
    assert.equal(refused.status, 403);
    assert.match(await refused.text(), /ERR_SIGNED_URL_INVALID/);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(actuator.received.length, 2, 'no webhook for changes that did not happen');
    assert.equal((await show()).deliveries.pending, 0);
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    await actuator.down();
    await removeServerData(dataDir);
  }
});

test('the actuator down for a while (and hearth-server killed meanwhile) still gets every change, in order, once it is back', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-e2e-scaling-'));
  const port = await freePort();
  let server = await spawnServer(dataDir, port);
  const actuator = new Actuator(await freePort());
  try {
    const call = api(server);
    assert.equal((await call('POST', '/stacks', { stack_name: 'web' })).status, 201);
    await call('POST', '/stacks/web/scaling_groups', {
      name: 'workers',
      min_size: 1,
      max_size: 10,
      actuator: { url: actuator.url, secret: SECRET },
    });
    await call('POST', '/stacks/web/scaling_policies', {
      name: 'up',
      group: 'workers',
      adjustment_type: 'change_in_capacity',
      scaling_adjustment: 1,
    });
    const policy = (await call<{ scaling_policy: ScalingPolicy }>('GET', '/stacks/web/scaling_policies/up')).body.scaling_policy;
    for (let i = 0; i < 3; i++) assert.equal((await alarm(policy.alarm_url!)).status, 200);
    const show = async () =>
      (await api(server)<{ scaling_group: ScalingGroup }>('GET', '/stacks/web/scaling_groups/workers')).body.scaling_group;
    await until('a failed delivery to show', async () => (await show()).deliveries.failed === 1);
    const waiting = await show();
    assert.equal(waiting.desired_capacity, 4);
    assert.equal(waiting.deliveries.pending, 4);
    assert.match(waiting.deliveries.last_error ?? '', /ECONNREFUSED/);

    // hearth-server dies with the outbox full; the next one picks it up from the database.
    server.child.kill('SIGKILL');
    await server.exited;
    server = await spawnServer(dataDir, port);
    await actuator.up();
    await until('every change', () => actuator.received.length === 4);
    assert.deepEqual(
      actuator.received.map((r) => [r.body.sequence, r.body.previous_capacity, r.body.desired_capacity]),
      [
        [1, 0, 1],
        [2, 1, 2],
        [3, 2, 3],
        [4, 3, 4],
      ],
    );
    await until('the outbox to drain', async () => (await show()).deliveries.pending === 0);
    assert.equal((await show()).deliveries.delivered, 4);
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    await actuator.down();
    await removeServerData(dataDir);
  }
});

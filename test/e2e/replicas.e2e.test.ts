// Two hearth-server replicas (processes on different loopback ports) sharing one PostgreSQL
// database (issue 8): the change feed crosses replicas, timers and deliveries run once, signals stay
// idempotent, revocations are seen at once, and the feed survives its connection dropping.
import { after, before, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  ActuatorWebhook,
  AlarmHistoryItem,
  Event,
  MetadataDocument,
  ScalingGroup,
  ScalingPolicy,
  ServerCreated,
  SignalAck,
  SoftwareConfig,
  SoftwareDeployment,
  WaitCondition,
} from '@hearth/protocol';
import { createTestDatabase, postgresTestPass, type TestDatabase } from '../../packages/server/src/store/test-database.ts';
import { skipUnlessPostgres, startPostgres, type PostgresCluster } from '../helpers/postgres.ts';
import {
  admin,
  call,
  databaseName,
  errorCode,
  feedListeners,
  query,
  sleep,
  spawnReplica,
  until,
  type Replica,
  type Reply,
} from './replica-support.ts';

// This file starts its own cluster, so the suite's PostgreSQL pass (HEARTH_TEST_STORE=postgres) need not run it again.
const skip = skipUnlessPostgres() || (postgresTestPass() && 'runs in the first pass, on a cluster of its own');
const TEST_TIMEOUT_MS = 180_000;
/** The bound on a change reaching another replica's long-poll. */
const FEED_LATENCY_MS = 1000;

let cluster: PostgresCluster | undefined;
before(async () => {
  if (!skip) cluster = await startPostgres();
});
after(async () => {
  await cluster?.stop();
});

/** Runs `body` with replicas A and B on a fresh database; stops them and drops it afterwards, failed or not. */
async function withReplicas(
  t: TestContext,
  env: Record<string, string>,
  body: (a: Replica, b: Replica, database: TestDatabase) => Promise<void>,
): Promise<void> {
  const database = await createTestDatabase(cluster!.url);
  const started = await Promise.allSettled(['A', 'B'].map((name) => spawnReplica({ name, databaseUrl: database.url, env })));
  const replicas = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  try {
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    await body(replicas[0]!, replicas[1]!, database);
    for (const replica of replicas) assert.equal(replica.child.exitCode, null, `replica ${replica.name} is still running`);
  } catch (error) {
    for (const replica of replicas) t.diagnostic(`replica ${replica.name} stderr (tail):\n${replica.logTail()}`);
    throw error;
  } finally {
    const codes = await Promise.all(replicas.map((replica) => replica.stop()));
    await database.drop();
    codes.forEach((code, i) => assert.equal(code, 0, `replica ${replicas[i]!.name} stops cleanly on SIGTERM`));
  }
}

type Admin = ReturnType<typeof admin>;

function expectStatus(reply: Reply<unknown>, status: number, what: string): void {
  assert.equal(reply.status, status, `${what}: ${reply.status} ${JSON.stringify(reply.body)}`);
}

/** Registers a server; returns its id and its agent's Authorization header. */
async function registerServer(api: Admin, name: string): Promise<{ id: string; agent: Record<string, string> }> {
  const reply = await api<ServerCreated>('POST', '/servers', { name });
  expectStatus(reply, 201, `register ${name}`);
  return { id: reply.body.server.id, agent: { authorization: `Bearer ${reply.body.credential.token}` } };
}

async function createConfig(api: Admin): Promise<string> {
  const reply = await api<{ software_config: SoftwareConfig }>('POST', '/software_configs', {
    name: 'install',
    group: 'script',
    config: '#!/bin/sh\necho ok',
    outputs: [{ name: 'version' }],
  });
  expectStatus(reply, 200, 'create config'); // Heat's status for a new config
  return reply.body.software_config.id;
}

async function createDeployment(api: Admin, configId: string, serverId: string, timeout?: number): Promise<SoftwareDeployment> {
  const reply = await api<{ software_deployment: SoftwareDeployment }>('POST', '/software_deployments', {
    config_id: configId,
    server_id: serverId,
    ...(timeout === undefined ? {} : { timeout }),
  });
  expectStatus(reply, 200, 'create deployment'); // Heat's status for a new deployment
  return reply.body.software_deployment;
}

/** A project's events of one type (a fresh database per test: they are this test's). */
async function events(api: Admin, type: string, resourceId?: string): Promise<Event[]> {
  const filter = resourceId === undefined ? '' : `&resource_id=${resourceId}`;
  const reply = await api<{ events: Event[] }>('GET', `/events?type=${type}&limit=1000${filter}`);
  expectStatus(reply, 200, `events ${type}`);
  return reply.body.events;
}

/** A long-poll of the agent's metadata on `replica`, started once it is parked on the replica's feed. */
async function parkedLongPoll(replica: Replica, agent: Record<string, string>, etag: string) {
  const before = await feedListeners(replica);
  let settledAt: number | undefined;
  const reply = call<MetadataDocument>('GET', `${replica.url}/v1/guest/metadata?wait=30`, {
    headers: { ...agent, 'if-none-match': etag },
    timeoutMs: 40_000,
  }).finally(() => (settledAt = Date.now()));
  reply.catch(() => undefined); // a test that fails before awaiting it must not also report an unhandled rejection
  await until(`the long-poll to wait on replica ${replica.name}`, 10_000, async () =>
    (await feedListeners(replica)) > before || settledAt !== undefined ? true : undefined,
  );
  assert.equal(settledAt, undefined, 'the long-poll waits for a change');
  return { reply, settledAt: () => settledAt };
}

const options = { skip, timeout: TEST_TIMEOUT_MS };

test('an agent long-polling replica A sees a deployment created through replica B within 1 s', options, async (t) => {
  await withReplicas(t, {}, async (a, b) => {
    const onB = admin(b);
    const vm = await registerServer(onB, 'web-1');
    const configId = await createConfig(onB);
    const first = await call('GET', `${a.url}/v1/guest/metadata`, { headers: vm.agent });
    expectStatus(first, 200, 'first metadata read on A');
    let etag = first.headers.get('etag')!;
    const latencies: number[] = [];
    for (let round = 1; round <= 3; round++) {
      const poll = await parkedLongPoll(a, vm.agent, etag);
      const sentAt = Date.now();
      const deployment = await createDeployment(onB, configId, vm.id);
      const woken = await poll.reply;
      const latency = poll.settledAt()! - sentAt;
      latencies.push(latency);
      expectStatus(woken, 200, 'the long-poll on A');
      assert.ok(
        woken.body.deployments.some((entry) => entry.id === deployment.derived_config_id),
        'the document has the new deployment',
      );
      assert.ok(latency < FEED_LATENCY_MS, `round ${round}: the deployment reached A's long-poll ${latency} ms after B was asked`);
      etag = woken.headers.get('etag')!;
    }
    t.diagnostic(`POST to B -> A's long-poll answered: ${latencies.join(', ')} ms`);
  });
});

test('a wait condition (count 2) signalled through both replicas at once completes exactly once', options, async (t) => {
  await withReplicas(t, {}, async (a, b) => {
    const onA = admin(a);
    expectStatus(await onA('POST', '/stacks', { stack_name: 'app' }), 201, 'create stack');
    const created = await onA<{ wait_condition: WaitCondition }>('POST', '/stacks/app/wait_conditions', {
      name: 'ready',
      count: 2,
      timeout: 120,
    });
    expectStatus(created, 201, 'create wait condition');
    const { endpoint, token } = created.body.wait_condition.handle;
    const path = new URL(endpoint).pathname;
    // Five copies of each of the two signals to each replica, all in flight together.
    const sends = [1, 2, 3, 4, 5].flatMap(() =>
      ['a', 'b'].flatMap((id) =>
        [a, b].map((replica) =>
          call('POST', `${replica.url}${path}`, {
            headers: { 'x-auth-token': token },
            body: { status: 'SUCCESS', id, reason: `node ${id} up`, data: `data-${id}` },
          }),
        ),
      ),
    );
    const replies = await Promise.all(sends);
    for (const reply of replies) {
      // After the second distinct id the condition is done: later copies are refused, nothing else.
      if (reply.status !== 200) {
        expectStatus(reply, 409, 'a signal after completion');
        assert.equal(errorCode(reply), 'ERR_WAIT_CONDITION_DONE');
      }
    }
    t.diagnostic(
      `20 signals: ${replies.filter((r) => r.status === 200).length} applied, ${replies.filter((r) => r.status === 409).length} after completion (409)`,
    );
    for (const replica of [a, b]) {
      const shown = await admin(replica)<{ wait_condition: WaitCondition }>('GET', '/stacks/app/wait_conditions/ready');
      expectStatus(shown, 200, `show on ${replica.name}`);
      assert.equal(shown.body.wait_condition.status, 'COMPLETE');
      assert.equal(shown.body.wait_condition.received, 2);
      assert.deepEqual(shown.body.wait_condition.data, { a: 'data-a', b: 'data-b' });
    }
    assert.equal((await events(onA, 'wait_condition.complete')).length, 1, 'one completion event');
    assert.equal((await events(onA, 'wait_condition.failed')).length, 0);
  });
});

test('deployment and wait-condition deadlines fire exactly once with both replicas running', options, async (t) => {
  await withReplicas(t, {}, async (a, b) => {
    const [onA, onB] = [admin(a), admin(b)];
    const vm = await registerServer(onA, 'web-1');
    const configId = await createConfig(onA);
    expectStatus(await onA('POST', '/stacks', { stack_name: 'boot' }), 201, 'create stack');
    // The shortest timeouts (1 s), created through both replicas: both replicas' timers are armed for each.
    const deployments: string[] = [];
    const conditions: string[] = [];
    for (const [i, api] of [onA, onB, onA, onB].entries()) {
      deployments.push((await createDeployment(api, configId, vm.id, 1)).id);
      const name = `wait-${i}`;
      expectStatus(await api('POST', '/stacks/boot/wait_conditions', { name, count: 1, timeout: 1 }), 201, `create ${name}`);
      conditions.push(name);
    }
    const failedAll = async (replica: Replica) => {
      const shown = await Promise.all(
        deployments.map((id) => admin(replica)<{ software_deployment: SoftwareDeployment }>('GET', `/software_deployments/${id}`)),
      );
      const listed = await admin(replica)<{ wait_conditions: WaitCondition[] }>('GET', '/stacks/boot/wait_conditions');
      const done =
        shown.every((reply) => reply.body.software_deployment.status === 'FAILED') &&
        listed.body.wait_conditions.every((condition) => condition.status === 'FAILED');
      return done ? true : undefined;
    };
    const start = Date.now();
    await until('every deadline to pass', 30_000, () => failedAll(b), 200);
    t.diagnostic(`4 deployments and 4 wait conditions timed out within ${Date.now() - start} ms of the last create`);
    await sleep(2_500); // several more sweeps on both replicas: none may fire again
    assert.equal(await failedAll(a), true, 'A sees them failed too');
    const timedOut = await events(onA, 'deployment.timed_out');
    assert.deepEqual(timedOut.map((event) => event.resource_id).sort(), [...deployments].sort(), 'one deployment.timed_out per deployment');
    const conditionFailures = await events(onA, 'wait_condition.failed');
    assert.equal(conditionFailures.length, conditions.length, 'one wait_condition.failed per condition');
    assert.equal(new Set(conditionFailures.map((event) => event.resource_id)).size, conditions.length);
    for (const event of conditionFailures) assert.match(event.message, /^WaitConditionTimeout: 0 of 1 received/);
  });
});

test('the same deployment signal sent 20 times across both replicas is applied once', options, async (t) => {
  await withReplicas(t, {}, async (a, b) => {
    const onA = admin(a);
    const vm = await registerServer(onA, 'web-1');
    const deployment = await createDeployment(onA, await createConfig(onA), vm.id);
    const signal = { deploy_stdout: 'installed', deploy_stderr: '', deploy_status_code: 0, version: '1.24' };
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call<SignalAck>('POST', `${(i % 2 === 0 ? a : b).url}/v1/guest/deployments/${deployment.id}/signal`, {
          headers: vm.agent,
          body: signal,
        }),
      ),
    );
    for (const reply of replies) {
      expectStatus(reply, 200, 'a copy of the signal');
      assert.equal(reply.body.status, 'COMPLETE');
    }
    const firsts = replies.filter((reply) => !reply.body.duplicate);
    assert.equal(firsts.length, 1, 'exactly one reply says duplicate: false');
    t.diagnostic(`applied by replica ${replies.indexOf(firsts[0]!) % 2 === 0 ? 'A' : 'B'}; 19 duplicates acknowledged`);
    assert.equal((await events(onA, 'deployment.completed', deployment.id)).length, 1, 'one deployment.completed event');
    const shown = await admin(b)<{ software_deployment: SoftwareDeployment }>('GET', `/software_deployments/${deployment.id}`);
    assert.deepEqual(shown.body.software_deployment.output_values, {
      version: '1.24',
      deploy_stdout: 'installed',
      deploy_stderr: '',
      deploy_status_code: 0,
    });
  });
});

test('deleting a server through replica B revokes its credential on replica A, which had it cached, at once', options, async (t) => {
  await withReplicas(t, {}, async (a, b) => {
    const vm = await registerServer(admin(b), 'web-1');
    const metadataOnA = (headers: Record<string, string>) => call('GET', `${a.url}/v1/guest/metadata`, { headers });
    // A verifies the credential and caches it (the next polls are answered from memory).
    for (let i = 0; i < 3; i++) expectStatus(await metadataOnA(vm.agent), 200, 'an authenticated poll on A');
    const unknown = await metadataOnA({ authorization: `Bearer AK${randomBytes(8).toString('hex')}:${randomBytes(20).toString('hex')}` });
    assert.ok(unknown.status === 401 || unknown.status === 404, `an unknown credential: ${unknown.status}`);

    expectStatus(await admin(b)('DELETE', `/servers/${vm.id}`), 204, 'delete the server on B');
    const deletedAt = Date.now();
    const refused = await until(
      'A to refuse the deleted credential',
      10_000,
      async () => {
        const reply = await metadataOnA(vm.agent);
        return reply.status === 200 ? undefined : reply;
      },
      0,
    );
    const latency = Date.now() - deletedAt;
    t.diagnostic(`A refused the deleted server's credential ${latency} ms after B acknowledged the delete`);
    assert.equal(refused.status, unknown.status, 'as for an unknown credential');
    assert.equal(errorCode(refused), errorCode(unknown));
    assert.ok(latency < FEED_LATENCY_MS, `revoked on A within ${latency} ms`);
  });
});

test('a long-poll on A still gets a change B made while the feed connections were down (re-check on reconnect)', options, async (t) => {
  await withReplicas(t, {}, async (a, b, database) => {
    const onB = admin(b);
    const vm = await registerServer(onB, 'web-1');
    const configId = await createConfig(onB);
    const first = await call('GET', `${a.url}/v1/guest/metadata`, { headers: vm.agent });
    const poll = await parkedLongPoll(a, vm.agent, first.headers.get('etag')!);
    // B's pool gets a few connections it keeps while new connections to the database are refused.
    await Promise.all(Array.from({ length: 6 }, () => onB('GET', '/servers')));
    const name = databaseName(database.url);
    const feedBackends = async () =>
      (
        await query<{ n: number }>(
          cluster!.url,
          "select count(*)::int as n from pg_stat_activity where application_name = 'hearth-server feed' and datname = $1",
          [name],
        )
      )[0]!.n;
    assert.equal(await feedBackends(), 2, 'each replica LISTENs on one connection');
    // Both replicas' LISTEN connections are terminated and cannot come back until the database
    // accepts connections again: B's commit below is NOTIFYed to nobody.
    await query(cluster!.url, `alter database "${name}" allow_connections false`);
    let reopenedAt: number | undefined;
    try {
      await query(
        cluster!.url,
        "select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'hearth-server feed' and datname = $1",
        [name],
      );
      await until('the feed connections to go', 10_000, async () => ((await feedBackends()) === 0 ? true : undefined));
      const deployment = await createDeployment(onB, configId, vm.id);
      await sleep(500);
      assert.equal(poll.settledAt(), undefined, 'A was not told (its listener is down), so its long-poll still waits');
      await query(cluster!.url, `alter database "${name}" allow_connections true`);
      reopenedAt = Date.now();
      const woken = await poll.reply;
      const recovery = poll.settledAt()! - reopenedAt;
      t.diagnostic(`A's long-poll answered ${recovery} ms after the database took connections again`);
      expectStatus(woken, 200, 'the long-poll on A');
      assert.ok(woken.body.deployments.some((entry) => entry.id === deployment.derived_config_id));
      assert.ok(recovery < 6_000, `re-checked within a few seconds of the reconnect (${recovery} ms)`);

      // The listener is back: the next change crosses over by NOTIFY again, within the usual bound.
      await until('both feed connections back', 10_000, async () => ((await feedBackends()) === 2 ? true : undefined));
      const next = await parkedLongPoll(a, vm.agent, woken.headers.get('etag')!);
      const sentAt = Date.now();
      await createDeployment(onB, configId, vm.id);
      expectStatus(await next.reply, 200, 'the next long-poll on A');
      const latency = next.settledAt()! - sentAt;
      t.diagnostic(`after the reconnect: POST to B -> A's long-poll answered in ${latency} ms`);
      assert.ok(latency < FEED_LATENCY_MS, `${latency} ms`);
    } finally {
      if (reopenedAt === undefined) await query(cluster!.url, `alter database "${name}" allow_connections true`);
    }
  });
});

/** A loopback receiver that records every POST (path and JSON body) and answers 204. */
async function receiver() {
  const posts: Array<{ path: string; body: Record<string, unknown> }> = [];
  const server: Server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    request.on('end', () => {
      posts.push({ path: request.url ?? '', body: JSON.parse(text || '{}') as Record<string, unknown> });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    posts,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

test('alarm evaluation and actuator deliveries run once across replicas: one webhook per capacity change', options, async (t) => {
  const hooks = await receiver();
  try {
    await withReplicas(t, { HEARTH_ALARM_SCHEDULE: '* * * * * *' }, async (a, b) => {
      const [onA, onB] = [admin(a), admin(b)];
      const vm = await registerServer(onA, 'web-1');
      expectStatus(await onA('POST', '/stacks', { stack_name: 'web' }), 201, 'create stack');
      const group = await onA('POST', '/stacks/web/scaling_groups', {
        name: 'workers',
        min_size: 1,
        max_size: 5,
        actuator: { url: `${hooks.url}/scale` },
      });
      expectStatus(group, 201, 'create scaling group');
      const scaled = () => hooks.posts.filter((post) => post.path === '/scale').map((post) => post.body as unknown as ActuatorWebhook);
      const alarmed = () => hooks.posts.filter((post) => post.path === '/alarm');
      await until('the initial capacity webhook', 20_000, async () => (scaled().length >= 1 ? true : undefined));
      // As the provisioner reports it: only a member's samples may name the group.
      expectStatus(await onA('POST', '/stacks/web/scaling_groups/workers/members', { add: [vm.id] }), 200, 'add the member');

      const policy = await onB<{ scaling_policy: ScalingPolicy }>('POST', '/stacks/web/scaling_policies', {
        name: 'scale-up',
        group: 'workers',
        adjustment_type: 'change_in_capacity',
        scaling_adjustment: 1,
        act_only_on_alarm: true,
      });
      expectStatus(policy, 201, 'create scaling policy');
      const alarm = await onA('POST', '/alarms', {
        name: 'cpu-high',
        metric_name: 'CPUUtilization',
        dimensions: { AutoScalingGroupName: 'workers' },
        statistic: 'Average',
        period: 2,
        evaluation_periods: 1,
        threshold: 80,
        comparison_operator: 'GreaterThanThreshold',
        alarm_actions: [policy.body.scaling_policy.alarm_url, `${hooks.url}/alarm`],
      });
      expectStatus(alarm, 201, 'create alarm');

      // The agent reports high CPU to both replicas in turn.
      let turn = 0;
      const push = async () => {
        const replica = turn++ % 2 === 0 ? a : b;
        const reply = await call('POST', `${replica.url}/v1/guest/metrics`, {
          headers: vm.agent,
          body: {
            samples: [{ metric_name: 'CPUUtilization', value: 95, unit: 'Percent', dimensions: { AutoScalingGroupName: 'workers' } }],
          },
        });
        expectStatus(reply, 200, `metrics to ${replica.name}`);
      };
      let pushFailure: unknown;
      const pushing = setInterval(() => void push().catch((error: unknown) => (pushFailure ??= error)), 300);
      try {
        await push();
        const desired = async (replica: Replica) =>
          (await admin(replica)<{ scaling_group: ScalingGroup }>('GET', '/stacks/web/scaling_groups/workers')).body.scaling_group;
        await until(
          'the alarm to scale the group to 2',
          30_000,
          async () => ((await desired(b)).desired_capacity === 2 ? true : undefined),
          200,
        );
        await until('the scale-up webhook', 20_000, async () => (scaled().length >= 2 ? true : undefined));
        // An operator change through B: one more webhook.
        expectStatus(await onB('PATCH', '/stacks/web/scaling_groups/workers', { desired_capacity: 3 }), 200, 'set desired capacity 3');
        await until('the third webhook', 20_000, async () => (scaled().length >= 3 ? true : undefined));
        await sleep(3_000); // three more evaluations and a dozen delivery rounds on each replica
        assert.equal(pushFailure, undefined);

        assert.deepEqual(
          scaled().map((hook) => [hook.sequence, hook.previous_capacity, hook.desired_capacity]),
          [
            [1, 0, 1],
            [2, 1, 2],
            [3, 2, 3],
          ],
          'one webhook per capacity change, in order',
        );
        assert.equal(new Set(scaled().map((hook) => hook.delivery_id)).size, 3);
        assert.equal(alarmed().length, 1, 'the alarm action was sent once');
        const history = await onA<{ history: AlarmHistoryItem[] }>('GET', '/alarms/cpu-high/history');
        assert.deepEqual(
          history.body.history.map((item) => `${item.previous}->${item.current}`),
          ['INSUFFICIENT_DATA->ALARM'],
          'one state change recorded',
        );
        const shown = await desired(a);
        assert.equal(shown.desired_capacity, 3);
        assert.equal(shown.deliveries.pending, 0);
        assert.equal(shown.deliveries.delivered, 3);
        t.diagnostic(`webhooks: ${scaled().length} for 3 changes; alarm actions: ${alarmed().length}`);
      } finally {
        clearInterval(pushing);
      }
    });
  } finally {
    await hooks.close();
  }
});

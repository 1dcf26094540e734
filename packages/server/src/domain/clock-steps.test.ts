// What a step of the wall clock (NTP, often right after boot) does to durations: the waits of
// long-polls and the restart grace are measured on the monotonic clock, so a step back of an hour
// does not keep them going for an hour. The step is made in-process: `Date` (Date.now and
// `new Date()`, what a step of the system clock moves) is offset; timers and performance.now() are not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../app.ts';
import { ADMIN, createConfig, createDeployment, registerServer, testApp, testStore, waitConditionHandle } from '../test-support.ts';
import { stepWallClock } from '../test-support-clock.ts';

const HOUR_MS = 3_600_000;

/** Polls `read` every 100 ms until `done` accepts what it returns or `ms` pass; returns the last value. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms: number): Promise<T> {
  let value = await read();
  for (let waited = 0; waited < ms && !done(value); waited += 100) {
    await sleep(100);
    value = await read();
  }
  return value;
}

/** Runs a request that waits 1 s, steps the wall clock back an hour while it waits; returns the reply and how long it took. */
async function waitAcrossStepBack(
  app: FastifyInstance,
  request: InjectOptions & { url: string },
): Promise<{ reply: LightMyRequestResponse; ms: number }> {
  const started = performance.now();
  const pending = app.inject(request);
  await sleep(200);
  const restore = stepWallClock(-HOUR_MS);
  try {
    // Bounded: a wait still open 5 s later is the defect, not a slow machine.
    const reply = await Promise.race([pending, sleep(5_000).then(() => undefined)]);
    assert.ok(reply, `${request.url} was still waiting 5 s after the clock stepped back an hour`);
    return { reply, ms: performance.now() - started };
  } finally {
    restore();
  }
}

test('long-polls end after their wait on the monotonic clock when the wall clock steps back', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const server = await registerServer(app);
    const deployment = await createDeployment(app, await createConfig(app), server.id);
    const first = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    assert.equal(first.statusCode, 200);

    const metadata = await waitAcrossStepBack(app, {
      url: '/v1/guest/metadata?wait=1',
      headers: { ...server.auth, 'if-none-match': String(first.headers.etag) },
    });
    assert.equal(metadata.reply.statusCode, 304, metadata.reply.body);
    assert.ok(metadata.ms >= 900 && metadata.ms < 3_000, `metadata long-poll took ${Math.round(metadata.ms)} ms`);

    const waited = await waitAcrossStepBack(app, { url: `/v1/default/software_deployments/${deployment}?wait=1`, headers: ADMIN });
    assert.equal(waited.reply.statusCode, 200, waited.reply.body);
    assert.equal(waited.reply.json<{ software_deployment: { status: string } }>().software_deployment.status, 'IN_PROGRESS');
    assert.ok(waited.ms >= 900 && waited.ms < 3_000, `deployment wait took ${Math.round(waited.ms)} ms`);

    await waitConditionHandle(app);
    const url = '/v1/default/stacks/web/wait_conditions/ready';
    const condition = await app.inject({ url, headers: ADMIN });
    assert.equal(condition.statusCode, 200);
    const polled = await waitAcrossStepBack(app, {
      url: `${url}?wait=1`,
      headers: { ...ADMIN, 'if-none-match': String(condition.headers.etag) },
    });
    assert.equal(polled.reply.statusCode, 304, polled.reply.body);
    assert.ok(polled.ms >= 900 && polled.ms < 3_000, `wait-condition long-poll took ${Math.round(polled.ms)} ms`);
  } finally {
    await done();
  }
});

test('the restart grace lasts its duration when the wall clock steps back an hour just after the start', async () => {
  const store = await testStore();
  const open = (restartGraceMs: number) =>
    buildApp({
      dataDir: store.dataDir,
      databaseUrl: store.databaseUrl,
      adminToken: 'admin-secret',
      secretKey: 'unit-test-secret-key-0123456789',
      publicUrl: 'http://127.0.0.1:9',
      restartGraceMs,
    });
  try {
    const before = await open(0);
    const server = await registerServer(before, 'vm');
    const deployment = await createDeployment(before, await createConfig(before), server.id, { timeout: 600 });
    await waitConditionHandle(before);
    // Both deadlines passed two hours ago, while hearth-server was down: before "now" even after the step.
    const passed = new Date(Date.now() - 2 * HOUR_MS).toISOString();
    await before.services.store.write(async ({ trx }) => {
      await trx.updateTable('software_deployments').set({ deadline_at: passed }).where('id', '=', deployment).execute();
      await trx.updateTable('wait_conditions').set({ deadline_at: passed }).where('name', '=', 'ready').execute();
    });
    await before.close();

    const after = await open(1500);
    const restore = stepWallClock(-HOUR_MS);
    try {
      const shown = await until(
        async () =>
          (await after.inject({ url: `/v1/default/software_deployments/${deployment}`, headers: ADMIN })).json<{
            software_deployment: { status: string; status_reason: string };
          }>().software_deployment,
        (d) => d.status !== 'IN_PROGRESS',
        6_000,
      );
      assert.equal(shown.status, 'FAILED', 'failed once the 1.5 s grace is over, not an hour later');
      assert.match(shown.status_reason, /hearth-server was not running when the deadline passed; it waited 2 s after starting/);
      const condition = await until(
        async () =>
          (await after.inject({ url: '/v1/default/stacks/web/wait_conditions/ready', headers: ADMIN })).json<{
            wait_condition: { status: string; reason: string };
          }>().wait_condition,
        (c) => c.status !== 'IN_PROGRESS',
        6_000,
      );
      assert.equal(condition.status, 'FAILED', `the wait condition too: ${condition.status}`);
    } finally {
      restore();
      await after.close();
    }
  } finally {
    await store.remove();
  }
});

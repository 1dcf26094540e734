// A mass expiry: thousands of deployments whose deadlines pass in the same second (a fleet deployed
// at once, a restart after an outage). Each must time out once, with the reason of its own case,
// while the server keeps answering requests and signals in between.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { heatTime } from '@hearth/protocol';
import { topics } from '../feed/feed.ts';
import type { DeploymentRow } from '../store/schema.ts';
import { createConfig, createDeployment, registerServer, testApp } from '../test-support.ts';

const DUE = 2000;
const LIVE = 20;
/** Longest a request may wait while deadlines are swept: a wide margin over the ~50 ms batches measured on a loaded machine. */
const ANSWER_WITHIN_MS = 1000;

test(`${DUE} deployments due at once time out with their own reasons, one event each, while requests are answered`, async () => {
  const { app, done } = await testApp();
  try {
    const seen = await registerServer(app, 'seen');
    const silent = await registerServer(app, 'silent');
    // The seen server's agent has called (its last-seen time is pending in memory, not yet stored).
    assert.equal((await app.inject({ url: '/v1/guest/metadata', headers: seen.auth })).statusCode, 200);
    const configId = await createConfig(app);
    // The first signal waits for the writer thread to boot (seconds under tsx on a loaded machine: 1.7 s once in
    // CI, counted against the sweep): one is sent before anything is timed.
    const warmUp = await createDeployment(app, configId, seen.id);
    const warmed = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${warmUp}/signal`,
      headers: seen.auth,
      payload: { deploy_status_code: 0 },
    });
    assert.equal(warmed.statusCode, 200, warmed.body);
    const fetchedAt = '2026-01-02T03:04:05.000Z';
    const heartbeatAt = '2026-01-02T03:09:05.000Z';
    const { store, feed } = app.services;
    const due: string[] = [];
    const live: Array<{ id: string; auth: { authorization: string } }> = [];
    for (let from = 0; from < DUE + LIVE; from += 500) {
      await store.write(async ({ trx, now }) => {
        const rows: DeploymentRow[] = [];
        for (let i = from; i < Math.min(from + 500, DUE + LIVE); i++) {
          const id = randomUUID();
          const isDue = i < DUE;
          // The live deployments are the seen server's: a signal would make the silent one seen.
          const owner = isDue && i % 2 === 1 ? silent : seen;
          if (isDue) due.push(id);
          else live.push({ id, auth: owner.auth });
          rows.push({
            id,
            project_id: 'default',
            server_id: owner.id,
            config_id: configId,
            derived_config_id: randomUUID(),
            derived_at: now,
            name: null,
            action: 'CREATE',
            status: 'IN_PROGRESS',
            status_reason: 'Deploy data available',
            input_values: '{}',
            output_values: null,
            signal_transport: 'HEARTH_SIGNAL',
            timeout_s: isDue ? 60 : 3600,
            // Every due deadline is in the past: the sweep starts as soon as the watcher looks.
            deadline_at: isDue ? new Date(Date.now() - 1000).toISOString() : new Date(Date.now() + 3_600_000).toISOString(),
            // Cases cycle by row: never fetched, fetched and silent, stopped heartbeating.
            fetched_at: isDue && i % 3 === 0 ? null : fetchedAt,
            last_heartbeat_at: isDue && i % 3 === 2 ? heartbeatAt : null,
            created_at: now,
            updated_at: null,
            stack_id: null,
            stack_name: null,
            resource_name: null,
            access_key_id: null,
          });
        }
        await trx.insertInto('software_deployments').values(rows).execute();
      });
    }

    // Real HTTP on loopback: a request waits for the event loop exactly as an agent's would.
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    const base = `http://127.0.0.1:${port}`;
    // Deployments each sweep transaction failed (the sweep's topics come before the commit's events topic).
    const dueIds = new Set(due);
    const perCommit: number[] = [];
    let inCommit = 0;
    let sweepStarted = 0;
    let sweepEnded = 0;
    const stopCounting = feed.subscribeAll((topic) => {
      if (topic.startsWith('deployment:') && dueIds.has(topic.slice('deployment:'.length))) inCommit++;
      if (topic === topics.projectEvents('default') && inCommit > 0) {
        perCommit.push(inCommit);
        inCommit = 0;
        sweepStarted ||= performance.now();
        sweepEnded = performance.now();
      }
    });
    const probes: Array<{ path: string; status: number; ms: number; start: number; end: number }> = [];
    let probing = true;
    const probe = async (path: string, init: RequestInit, everyMs: number, limit: number) => {
      for (let n = 0; probing && n < limit; n++) {
        const start = performance.now();
        const status = await fetch(`${base}${path.replace('{n}', String(n))}`, { ...init, signal: AbortSignal.timeout(10_000) }).then(
          async (reply) => (await reply.arrayBuffer(), reply.status),
          () => 0,
        );
        const end = performance.now();
        probes.push({ path, status, ms: end - start, start, end });
        await sleep(everyMs);
      }
    };
    const health = probe('/healthz', {}, 10, 3000);
    const signals = (async () => {
      for (const { id, auth } of live) {
        if (!probing) break;
        const start = performance.now();
        const reply = await fetch(`${base}/v1/guest/deployments/${id}/signal`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ deploy_status_code: 0, deploy_stdout: 'ok', deploy_stderr: '' }),
          signal: AbortSignal.timeout(10_000),
        }).catch(() => undefined);
        const end = performance.now();
        probes.push({ path: 'signal', status: reply?.status ?? 0, ms: end - start, start, end });
        await reply?.arrayBuffer();
        await sleep(20);
      }
    })();
    await sleep(50);
    feed.publish([topics.deadlines]);

    for (let waited = 0; ; waited += 50) {
      const left = await store.reader
        .selectFrom('software_deployments')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'IN_PROGRESS')
        .where('timeout_s', '=', 60)
        .executeTakeFirstOrThrow();
      if (Number(left.n) === 0) break;
      assert.ok(waited < 60_000, `${left.n} due deployments still IN_PROGRESS after 60 s`);
      await sleep(50);
    }
    probing = false;
    await Promise.all([health, signals]);
    stopCounting();

    const rows = await store.reader.selectFrom('software_deployments').selectAll().where('id', 'in', due).execute();
    assert.equal(rows.length, DUE);
    for (const row of rows) {
      assert.equal(row.status, 'FAILED', row.id);
      assert.equal(row.deadline_at, null);
      assert.ok(row.updated_at);
      const after = 'Timed out after 60 s: ';
      if (!row.fetched_at) {
        const seenPart =
          row.server_id === seen.id
            ? /its agent was last seen at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)$/
            : /its agent has never called hearth-server\)$/;
        const reason = row.status_reason ?? '';
        assert.ok(reason.startsWith(`${after}the agent of server ${row.server_id} never fetched this deployment (`), reason);
        assert.match(reason, seenPart);
      } else if (!row.last_heartbeat_at) {
        assert.equal(
          row.status_reason,
          `${after}the agent fetched the deployment at ${heatTime(new Date(fetchedAt))} but never signalled a result`,
        );
      } else {
        assert.equal(
          row.status_reason,
          `${after}the agent stopped heartbeating; the last heartbeat was at ${heatTime(new Date(heartbeatAt))}`,
        );
      }
    }
    const events = await store.reader
      .selectFrom('events')
      .select(['resource_id', 'message', 'data'])
      .where('type', '=', 'deployment.timed_out')
      .execute();
    assert.equal(events.length, DUE, 'one timed_out event per deployment');
    assert.equal(new Set(events.map((e) => e.resource_id)).size, DUE);
    const byId = new Map(rows.map((row) => [row.id, row]));
    const causes = new Set<string>();
    for (const event of events) {
      const row = byId.get(event.resource_id)!;
      assert.equal(event.message, row.status_reason);
      // The reason as a code too, for scripts reading events.
      const cause = !row.fetched_at ? 'never_fetched' : row.last_heartbeat_at ? 'heartbeats_stopped' : 'never_signalled';
      causes.add(cause);
      assert.deepEqual(JSON.parse(event.data), { timeout: 60, cause, server_was_down: false });
    }
    assert.equal(causes.size, 3, 'every cause was seen');
    const untouched = await store.reader
      .selectFrom('software_deployments')
      .select(['status'])
      .where(
        'id',
        'in',
        live.map((l) => l.id),
      )
      .execute();
    assert.ok(
      untouched.every((row) => row.status !== 'FAILED'),
      'deployments with time left are not timed out',
    );

    // In batches, with requests served in between: no transaction holds the server for all of them.
    assert.equal(
      perCommit.reduce((a, b) => a + b, 0),
      DUE,
    );
    assert.ok(Math.max(...perCommit) <= 200, `a sweep transaction failed ${Math.max(...perCommit)} deployments`);
    const during = probes.filter((p) => p.end >= sweepStarted && p.start <= sweepEnded);
    assert.ok(during.length > 0, 'requests were made while the sweep ran');
    // A sweep that held the event loop would hold a request for all of it; one that yields between its 10
    // batches, for about one batch. On a loaded machine every batch is slower: the bound grows with the
    // sweep, and by the slowest answer outside it (what the machine alone cost a request meanwhile).
    const sweepMs = sweepEnded - sweepStarted;
    const noiseMs = Math.max(0, ...probes.filter((p) => !during.includes(p)).map((p) => p.ms));
    const allowed = Math.max(ANSWER_WITHIN_MS, sweepMs / 3) + noiseMs;
    for (const p of during) {
      const what = `${p.path} took ${Math.round(p.ms)} ms during a sweep of ${Math.round(sweepMs)} ms (${Math.round(noiseMs)} ms at most outside it)`;
      assert.ok(p.ms < allowed, what);
    }
    for (const p of probes) if (p.path === '/healthz') assert.equal(p.status, 200);
    const signalled = probes.filter((p) => p.path === 'signal');
    assert.ok(signalled.length > 0);
    for (const p of signalled) assert.equal(p.status, 200, 'a signal during the sweep is accepted');
  } finally {
    await done();
  }
});

// A hearth-server replica while its PostgreSQL goes away and comes back (issue 8, "Connection
// loss"): requests during the outage get 503 ERR_STORE_UNAVAILABLE, never a 500 or a wrong answer;
// it recovers on its own; an acknowledged write is never lost and a signal retried after a 503 is
// applied once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Event, MetadataDocument, ServerCreated, SignalAck, SoftwareConfig, SoftwareDeployment } from '@hearth/protocol';
import { createTestDatabase, postgresTestPass } from '../../packages/server/src/store/test-database.ts';
import { skipUnlessPostgres, startPostgres, type PostgresCluster } from '../helpers/postgres.ts';
import { admin, call, databaseName, errorCode, query, sleep, spawnReplica, until, type Reply } from './replica-support.ts';

// This file starts its own cluster, so the suite's PostgreSQL pass (HEARTH_TEST_STORE=postgres) need not run it again.
const skip = skipUnlessPostgres() || (postgresTestPass() && 'runs in the first pass, on a cluster of its own');
/** Bound on one request during the outage: the pool gives up connecting after 3 s. */
const OUTAGE_REPLY_MS = 10_000;

let cluster: PostgresCluster | undefined;
before(async () => {
  if (!skip) cluster = await startPostgres();
});
after(async () => {
  await cluster?.stop();
});

function expectStatus(reply: Reply<unknown>, status: number, what: string): void {
  assert.equal(reply.status, status, `${what}: ${reply.status} ${JSON.stringify(reply.body)}`);
}

test(
  'PostgreSQL killed and started again: 503 ERR_STORE_UNAVAILABLE meanwhile, recovery without a restart, nothing lost or applied twice',
  { skip, timeout: 240_000 },
  async (t) => {
    const database = await createTestDatabase(cluster!.url);
    // The throwaway cluster runs with synchronous_commit=off, which lets a crash (kill is -m immediate)
    // lose commits already acknowledged; this database gets a production's durability back.
    await query(cluster!.url, `alter database "${databaseName(database.url)}" set synchronous_commit = on`);
    const replica = await spawnReplica({ name: 'A', databaseUrl: database.url }).catch(async (error: unknown) => {
      await database.drop();
      throw error;
    });
    const api = admin(replica);
    const pending: Array<Promise<unknown>> = [];
    let clusterDown = false;
    let writing = true;
    try {
      const created = await api<ServerCreated>('POST', '/servers', { name: 'web-1' });
      expectStatus(created, 201, 'register a server');
      const serverId = created.body.server.id;
      const agent = { authorization: `Bearer ${created.body.credential.token}` };
      const config = await api<{ software_config: SoftwareConfig }>('POST', '/software_configs', {
        name: 'install',
        group: 'script',
        config: '#!/bin/sh\necho ok',
      });
      expectStatus(config, 200, 'create a config');
      const configId = config.body.software_config.id;
      const newDeployment = { config_id: configId, server_id: serverId };
      const deployment = await api<{ software_deployment: SoftwareDeployment }>('POST', '/software_deployments', newDeployment);
      expectStatus(deployment, 200, 'create a deployment');
      const deploymentId = deployment.body.software_deployment.id;
      const metadata = await call<MetadataDocument>('GET', `${replica.url}/v1/guest/metadata`, { headers: agent });
      expectStatus(metadata, 200, "the agent's first poll");
      const etag = metadata.headers.get('etag')!;

      // An agent long-polls through the whole outage.
      let pollSettled = false;
      const longPoll = call<MetadataDocument>('GET', `${replica.url}/v1/guest/metadata?wait=60`, {
        headers: { ...agent, 'if-none-match': etag },
        timeoutMs: 90_000,
      }).finally(() => (pollSettled = true));
      longPoll.catch(() => undefined); // awaited below; a failure before that must not also count as unhandled
      pending.push(longPoll);
      // Writes in flight while the database dies and comes back: each answer is 200 or 503, and every 200 must survive.
      const acknowledged: string[] = [];
      const writer = (async () => {
        const outcomes: string[] = [];
        for (let i = 0; writing && i < 2_000; i++) {
          const name = `during-${i}`;
          try {
            const reply = await api('POST', '/software_configs', { name, group: 'script', config: 'true' });
            outcomes.push(reply.status === 200 ? '200' : `${reply.status} ${errorCode(reply)}`);
            if (reply.status === 200) acknowledged.push(name);
          } catch (error) {
            outcomes.push(`${String(error)} (${String((error as Error).cause)}) at ${Date.now()}`);
          }
          await sleep(25);
        }
        return outcomes;
      })();
      pending.push(writer);
      await sleep(200);

      await cluster!.kill();
      clusterDown = true;
      const downAt = Date.now();

      const signal = { deploy_stdout: 'installed', deploy_stderr: '', deploy_status_code: 0 };
      const duringOutage: Array<[string, () => Promise<Reply<unknown>>]> = [
        ['GET /readyz', () => call('GET', `${replica.url}/readyz`)],
        ['GET a deployment', () => api('GET', `/software_deployments/${deploymentId}`)],
        ['GET the servers', () => api('GET', '/servers')],
        ['GET the events', () => api('GET', '/events')],
        ['POST a config', () => api('POST', '/software_configs', { name: 'outage', group: 'script', config: 'true' })],
        ['POST a deployment', () => api('POST', '/software_deployments', newDeployment)],
        ['DELETE a deployment', () => api('DELETE', `/software_deployments/${deploymentId}`)],
        [
          'POST the deployment signal',
          () => call('POST', `${replica.url}/v1/guest/deployments/${deploymentId}/signal`, { headers: agent, body: signal }),
        ],
      ];
      // Twice: first on connections the pool held when the database died, then on fresh attempts.
      for (const round of [1, 2]) {
        for (const [what, send] of duringOutage) {
          const sentAt = Date.now();
          const reply = await send();
          const took = Date.now() - sentAt;
          expectStatus(reply, 503, `${what} during the outage (round ${round})`);
          assert.equal(errorCode(reply), 'ERR_STORE_UNAVAILABLE', what);
          assert.equal(reply.headers.get('retry-after'), '5', `${what}: when to try again`);
          assert.ok(took < OUTAGE_REPLY_MS, `${what} answered in ${took} ms`);
        }
        await sleep(500);
      }
      // The agent's cached credential and document still answer its conditional poll (no store needed).
      const cachedPoll = await call('GET', `${replica.url}/v1/guest/metadata`, { headers: { ...agent, 'if-none-match': etag } });
      assert.ok(cachedPoll.status === 304 || cachedPoll.status === 503, `a conditional poll during the outage: ${cachedPoll.status}`);
      t.diagnostic(
        `during the outage: every API call above 503 ERR_STORE_UNAVAILABLE; the agent's cached conditional poll ${cachedPoll.status}`,
      );
      expectStatus(await call('GET', `${replica.url}/healthz`), 200, 'the process answers /healthz');
      assert.equal(pollSettled, false, 'the long-poll still waits');
      assert.equal(replica.child.exitCode, null, 'hearth-server is still running');

      await cluster!.start();
      clusterDown = false;
      const startedAt = Date.now();
      t.diagnostic(`PostgreSQL was down for ${startedAt - downAt} ms`);
      await until('/readyz to answer 200 again', 60_000, async () =>
        (await call('GET', `${replica.url}/readyz`)).status === 200 ? true : undefined,
      );
      t.diagnostic(`/readyz answered 200 ${Date.now() - startedAt} ms after PostgreSQL started again`);
      const readsBack = await until('a read to succeed again', 30_000, async () => {
        const reply = await api<{ software_deployment: SoftwareDeployment }>('GET', `/software_deployments/${deploymentId}`);
        return reply.status === 200 ? reply : undefined;
      });
      assert.equal(readsBack.body.software_deployment.status, 'IN_PROGRESS', 'the signal answered 503 was not applied');
      t.diagnostic(`reads succeed ${Date.now() - startedAt} ms after PostgreSQL started again`);
      await sleep(500);
      writing = false;

      // The signal answered 503 is retried: applied once, then acknowledged as a duplicate.
      const retried = await call<SignalAck>('POST', `${replica.url}/v1/guest/deployments/${deploymentId}/signal`, {
        headers: agent,
        body: signal,
      });
      expectStatus(retried, 200, 'the retried signal');
      assert.equal(retried.body.duplicate, false);
      assert.equal(retried.body.status, 'COMPLETE');
      const again = await call<SignalAck>('POST', `${replica.url}/v1/guest/deployments/${deploymentId}/signal`, {
        headers: agent,
        body: signal,
      });
      expectStatus(again, 200, 'the same signal again');
      assert.equal(again.body.duplicate, true);
      const completed = await api<{ events: Event[] }>('GET', `/events?type=deployment.completed&resource_id=${deploymentId}`);
      assert.equal(completed.body.events.length, 1, 'one deployment.completed event');

      expectStatus(await api('GET', '/servers'), 200, 'GET the servers after');
      expectStatus(await api('POST', '/software_configs', { name: 'after', group: 'script', config: 'true' }), 200, 'POST a config after');
      const later = await api<{ software_deployment: SoftwareDeployment }>('POST', '/software_deployments', newDeployment);
      expectStatus(later, 200, 'POST a deployment after');

      // The long-poll held through the outage hears of the new deployment (the feed reconnected).
      const woken = await longPoll;
      expectStatus(woken, 200, 'the long-poll held through the outage');
      assert.ok(woken.body.deployments.some((entry) => entry.id === later.body.software_deployment.derived_config_id));
      // Its LISTEN connection comes back on its own (reconnect backoff: at most 2 s between attempts).
      await until('the replica to LISTEN again', 10_000, async () => {
        const [listening] = await query<{ n: number }>(
          cluster!.url,
          "select count(*)::int as n from pg_stat_activity where application_name = 'hearth-server feed' and datname = $1",
          [databaseName(database.url)],
        );
        return listening!.n === 1 ? true : undefined;
      });
      t.diagnostic(`the feed LISTENs again ${Date.now() - startedAt} ms after PostgreSQL started again`);

      // Every write acknowledged around the outage is there.
      const outcomes = await writer;
      const count = (outcome: string) => outcomes.filter((o) => o === outcome).length;
      t.diagnostic(`writes around the outage: ${count('200')} acknowledged, ${count('503 ERR_STORE_UNAVAILABLE')} answered 503`);
      for (const outcome of outcomes)
        assert.ok(outcome === '200' || outcome === '503 ERR_STORE_UNAVAILABLE', `a write around the outage: ${outcome}`);
      const configs = await api<{ software_configs: Array<{ name: string }> }>('GET', '/software_configs?limit=1000');
      expectStatus(configs, 200, 'list configs');
      const stored = new Set(configs.body.software_configs.map((c) => c.name));
      for (const name of acknowledged) assert.ok(stored.has(name), `acknowledged write ${name} is stored`);
      assert.equal(replica.child.exitCode, null, 'hearth-server never stopped');
    } catch (error) {
      const exit = replica.child.exitCode ?? replica.child.signalCode;
      t.diagnostic(`hearth-server ${exit === null ? 'is still running' : `exited (${exit})`}; stderr (tail):\n${replica.logTail()}`);
      throw error;
    } finally {
      writing = false;
      if (clusterDown) await cluster!.start().catch(() => undefined);
      const code = await replica.stop();
      await Promise.allSettled(pending);
      await database.drop();
      assert.equal(code, 0, 'hearth-server stops cleanly on SIGTERM');
    }
  },
);

// One VM heartbeating its deployment in a tight loop must not push the rest of its project's history
// out of the events retention's count bound: a deployment writes at most one heartbeat row per 10 s,
// which shows the latest heartbeat and how many it stands for. Real HTTP on 127.0.0.1, a real store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Event, TimelineEntry } from '@hearth/protocol';
import { ADMIN, createConfig, createDeployment, registerServer, testApp } from '../../test-support.ts';
import { EventsRetention } from '../../domain/events-retention.ts';

test('heartbeats in a loop: every one extends the deadline, the timeline keeps one row per 10 s, and the project keeps its other events', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const [a, b] = [await registerServer(app, 'a'), await registerServer(app, 'b')];
    const config = await createConfig(app);
    const ofA = await createDeployment(app, config, a.id, { timeout: 600 });
    const ofB = await createDeployment(app, config, b.id);
    const beat = async (message: string) => {
      const reply = await fetch(`${base}/v1/guest/deployments/${ofA}/heartbeat`, {
        method: 'POST',
        headers: { ...a.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ message, progress: 50 }),
      });
      assert.equal(reply.status, 200, await reply.clone().text());
      return (await reply.json()) as { deadline: string };
    };
    let deadline = '';
    for (let i = 1; i <= 300; i++) {
      const ack = await beat(`step ${i}`);
      assert.ok(ack.deadline >= deadline);
      deadline = ack.deadline;
    }
    const events = async (query: string) =>
      ((await (await fetch(`${base}/v1/default/events?limit=1000${query}`, { headers: ADMIN })).json()) as { events: Event[] }).events;
    const beats = await events('&type=deployment.heartbeat');
    assert.equal(beats.length, 1, JSON.stringify(beats.slice(0, 3)));
    assert.match(beats[0]!.message, /^Heartbeat \(300 since \S+Z\) \(50%\): step 300$/);
    assert.equal(beats[0]!.data.count, 300);
    assert.equal(beats[0]!.data.message, 'step 300');
    const shown = (await (await fetch(`${base}/v1/default/software_deployments/${ofA}`, { headers: ADMIN })).json()) as {
      software_deployment: { last_heartbeat_time: string; deadline: string };
    };
    assert.equal(shown.software_deployment.deadline, deadline);
    assert.notEqual(shown.software_deployment.last_heartbeat_time, null);

    // Past the window (its row's time moved back 11 s), the next heartbeat starts a row of its own.
    await app.services.store.write(({ trx }) =>
      trx
        .updateTable('events')
        .set({ time: new Date(Date.now() - 11_000).toISOString() })
        .where('id', '=', beats[0]!.id)
        .execute(),
    );
    await beat('later');
    const timeline = (await (await fetch(`${base}/v1/default/software_deployments/${ofA}/timeline`, { headers: ADMIN })).json()) as {
      timeline: TimelineEntry[];
    };
    const rows = timeline.timeline.filter((entry) => entry.type === 'deployment.heartbeat').map((entry) => entry.message);
    assert.deepEqual(rows, [beats[0]!.message, 'Heartbeat (50%): later']);

    // A bound of 10 events per project keeps B's deployment's history: A's loop wrote a handful.
    const retention = new EventsRetention(app.services.store, { days: 0, maxPerProject: 10 }, (error) => assert.fail(String(error)));
    assert.equal(await retention.purge(), 0);
    assert.ok((await events(`&resource_id=${ofB}`)).some((event) => event.type === 'deployment.created'));
  } finally {
    await done();
  }
});

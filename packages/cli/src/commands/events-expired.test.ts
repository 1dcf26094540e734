import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { EventsRetention } from '../../../server/src/domain/events-retention.ts';
import { resourceEvent } from '../../../server/src/domain/events.ts';
import { testApp } from '../../../server/src/test-support.ts';
import { hintFor } from '../error-report.ts';
import { runWithClient } from '../test-support.ts';

// `hearth events` against a real hearth-server (in-process, on 127.0.0.1) whose events retention
// deleted events after the cursor: exit 1 with the error and the command that goes on, no reconnects.

test('hearth events and events --follow with a cursor below what the retention deleted: exit 1, ERR_EVENT_CURSOR_EXPIRED and the command to go on', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const { store } = app.services;
    const resource = { project_id: 'default', resource_type: 'server', resource_id: 'vm-1', server_id: null };
    await store.write(async ({ event }) => {
      for (let i = 0; i < 20; i++) event(resourceEvent(resource, 'test.event', `event ${i}`));
    });
    const ids = (await store.reader.selectFrom('events').select('id').orderBy('id').execute()).map(({ id }) => Number(id));
    await new EventsRetention(store, { days: 0, maxPerProject: 5 }, (error) => assert.fail(String(error))).purge();
    const mark = ids.at(-6)!;
    await app.listen({ host: '127.0.0.1', port: 0 });
    const env = { HEARTH_URL: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, HEARTH_TOKEN: 'admin-secret' };

    const list = await runWithClient(['events', '--after', String(ids[0]), '--type', 'test.event'], env);
    assert.equal(list.code, 1, list.stderr);
    assert.equal(list.stdout, '');
    assert.equal(
      list.stderr,
      `hearth: Events after cursor ${ids[0]} were deleted by the events retention: start again from cursor ${mark}; the events up to it are gone. (HTTP 410, ERR_EVENT_CURSOR_EXPIRED)\n` +
        `hearth: hint: hearth-server's events retention (--events-retention-days, --events-max-per-project) deleted events you had not seen; to go on from the oldest event kept, knowing those are lost: hearth events --after ${mark} --type test.event\n`,
    );

    const started = Date.now();
    const follow = await runWithClient(['events', '--follow', '--after', String(ids[1])], env);
    assert.equal(follow.code, 1, follow.stderr);
    assert.ok(Date.now() - started < 5000, 'no reconnect loop');
    assert.doesNotMatch(follow.stderr, /reconnecting/);
    assert.match(follow.stderr, /\(HTTP 410, ERR_EVENT_CURSOR_EXPIRED\)\n/);
    assert.match(follow.stderr, new RegExp(`knowing those are lost: hearth events --follow --after ${mark}\\n$`));

    // The command it names lists the events kept.
    const again = await runWithClient(['--json', 'events', '--after', String(mark)], env);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(
      (JSON.parse(again.stdout) as { events: Array<{ id: number }> }).events.map((event) => event.id),
      ids.slice(-5),
    );
  } finally {
    await done();
  }
});

test('ERR_EVENT_CURSOR_EXPIRED from any command gets a hint: the events are lost, start from the cursor the message names', () => {
  assert.match(
    hintFor('ERR_EVENT_CURSOR_EXPIRED', { url: 'http://127.0.0.1:8000' }) ?? '',
    /retention deleted events .* start again from the cursor the message names/,
  );
});

// A heartbeat whose message the schema takes (at most 4096 characters) is never refused for the
// size its JSON takes: control characters escape to six bytes each, and a 413 would leave the
// deployment's deadline where it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createConfig, createDeployment, registerServer, testApp } from '../../test-support.ts';

test('heartbeats: a 4096-character message of control characters or astral characters extends the deadline; 4097 is a coded 400', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await registerServer(app);
    const deployment = await createDeployment(app, await createConfig(app), vm.id, { timeout: 600 });
    const url = `/v1/guest/deployments/${deployment}/heartbeat`;
    const headers = { ...vm.auth, 'content-type': 'application/json' };
    let previous = '';
    for (const message of ['\u001b'.repeat(4096), '\u0001\u0007\u001f'.repeat(1365), '\u{1F600}'.repeat(4096)]) {
      const payload = JSON.stringify({ message, progress: 50 });
      assert.ok(Buffer.byteLength(payload) > 16 * 1024);
      const reply = await app.inject({ method: 'POST', url, headers, payload });
      assert.equal(reply.statusCode, 200, reply.body.slice(0, 300));
      const { deadline } = reply.json<{ deadline: string }>();
      assert.ok(deadline >= previous);
      previous = deadline;
      const stored = await app.services.store.reader
        .selectFrom('software_deployments')
        .select(['last_heartbeat_at', 'deadline_at'])
        .where('id', '=', deployment)
        .executeTakeFirstOrThrow();
      assert.notEqual(stored.last_heartbeat_at, null);
    }
    // Every character escaped as JSON may write it, surrogate pairs included, still fits.
    const escaped = `{"message":"${'\\ud83d\\ude00'.repeat(4096)}"}`;
    assert.equal((await app.inject({ method: 'POST', url, headers, payload: escaped })).statusCode, 200);
    const tooLong = await app.inject({ method: 'POST', url, headers, payload: JSON.stringify({ message: 'x'.repeat(4097) }) });
    assert.equal(tooLong.statusCode, 400, tooLong.body);
    assert.equal(tooLong.json<{ error: { code: string } }>().error.code, 'ERR_REQUEST_INVALID');
  } finally {
    await done();
  }
});

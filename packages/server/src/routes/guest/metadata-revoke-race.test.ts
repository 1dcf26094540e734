// A metadata request checks its credential before it builds (or waits for) the document: deleting the
// server can commit in between. Each test lets the DELETE win deterministically, by running it just
// after a store read of the request: once DELETE has answered 204, the request must get
// ERR_AUTH_INVALID, never the deleted server's document (nor a 304 after the whole wait).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp } from '../../test-support.ts';

/** Runs `interloper` once, after the next call of `object[method]` has resolved and before its caller sees the result. */
function after<T extends object, K extends keyof T>(
  object: T,
  method: K,
  interloper: () => Promise<LightMyRequestResponse>,
): { reply: () => LightMyRequestResponse } {
  const original = object[method] as (...args: unknown[]) => Promise<unknown>;
  let reply: LightMyRequestResponse | undefined;
  (object[method] as unknown) = async (...args: unknown[]) => {
    delete object[method];
    const result = await original.apply(object, args);
    reply = await interloper();
    return result;
  };
  return {
    reply: () => {
      assert.ok(reply, 'the interloper did not run');
      return reply;
    },
  };
}

const deleteServer = (app: FastifyInstance, id: string) => () =>
  app.inject({ method: 'DELETE', url: `/v1/default/servers/${id}`, headers: ADMIN });

function assertRevoked(reply: LightMyRequestResponse, what: string): void {
  assert.equal(reply.statusCode, 401, `${what}: ${reply.body}`);
  assert.equal(errorCode(reply), 'ERR_AUTH_INVALID', what);
  assert.equal(reply.headers.etag, undefined, `${what}: no validator for a revoked credential`);
}

test('a server deleted just after its credential was read from the store: the first GET gets 401, not the document', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    await createDeployment(app, await createConfig(app), server.id);
    const deleted = after(app.services.servers, 'byAccessKeyId', deleteServer(app, server.id));
    const reply = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
    assertRevoked(reply, 'plain GET');
  } finally {
    await done();
  }
});

test('a server deleted while its document is being built: the GET gets 401, not the document', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    assert.equal((await app.inject({ url: '/v1/guest/metadata', headers: server.auth })).statusCode, 200);
    // A new deployment drops the cached document: the next GET builds it (the credential stays cached).
    await createDeployment(app, await createConfig(app), server.id);
    const deleted = after(app.services.metadata, 'snapshot', deleteServer(app, server.id));
    const reply = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
    assertRevoked(reply, 'GET while building');
  } finally {
    await done();
  }
});

test('a server deleted before its long-poll starts waiting: 401 at once, not a reply after the wait', async () => {
  const { app, done } = await testApp();
  try {
    for (const [what, target] of [
      ['credential read', 'servers'],
      ['document built', 'metadata'],
    ] as const) {
      const server = await registerServer(app, what.replace(' ', '-'));
      const etag = String((await app.inject({ url: '/v1/guest/metadata', headers: server.auth })).headers.etag);
      // What a replica does after its feed reconnected: cached credentials and documents are dropped.
      app.services.feed.wakeAll();
      const deleted =
        target === 'servers'
          ? after(app.services.servers, 'byAccessKeyId', deleteServer(app, server.id))
          : after(app.services.metadata, 'snapshot', deleteServer(app, server.id));
      const started = Date.now();
      // A wait far longer than the revocation takes on a loaded machine: ending within half of it is not the wait running out.
      const reply = await app.inject({ url: '/v1/guest/metadata?wait=20', headers: { ...server.auth, 'if-none-match': etag } });
      assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
      assertRevoked(reply, `long-poll, ${what}`);
      assert.ok(Date.now() - started < 10_000, `${what}: ended by the revocation, not by the wait running out`);
    }
  } finally {
    await done();
  }
});

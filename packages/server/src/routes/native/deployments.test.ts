import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { ADMIN, createConfig, createDeployment, errorCode, testApp } from '../../test-support.ts';

/** Every deployment id the list yields, following `marker` pages of `limit` (query: extra filters). */
async function pageThrough(app: FastifyInstance, limit: number, query = ''): Promise<string[][]> {
  const pages: string[][] = [];
  let marker = '';
  for (;;) {
    const reply = await app.inject({ url: `/v1/default/software_deployments?limit=${limit}${query}${marker}`, headers: ADMIN });
    assert.equal(reply.statusCode, 200, reply.body);
    const page = reply.json<{ software_deployments: { id: string }[] }>().software_deployments.map((d) => d.id);
    if (page.length === 0) return pages;
    pages.push(page);
    assert.ok(pages.length < 50, 'paging does not end');
    marker = `&marker=${page.at(-1)!}`;
  }
}

const listIds = async (app: FastifyInstance, query = '') =>
  (await app.inject({ url: `/v1/default/software_deployments?limit=1000${query}`, headers: ADMIN }))
    .json<{ software_deployments: { id: string }[] }>()
    .software_deployments.map((d) => d.id);

test('deployments list pages by marker: items after it, in list order, each exactly once', async () => {
  const { app, done } = await testApp();
  try {
    const configId = await createConfig(app);
    // Some one by one (distinct times), some in one batch (the same created_at: ids break the tie).
    for (const server of ['vm-a', 'vm-b', 'vm-a']) await createDeployment(app, configId, server);
    await Promise.all(['vm-b', 'vm-a', 'vm-b', 'vm-a'].map((server) => createDeployment(app, configId, server)));
    await createDeployment(app, configId, 'vm-a');

    const all = await listIds(app);
    assert.equal(all.length, 8);
    const pages = await pageThrough(app, 2);
    assert.deepEqual(
      pages.map((p) => p.length),
      [2, 2, 2, 2],
    );
    assert.deepEqual(pages.flat(), all);

    const ofA = await listIds(app, '&server_id=vm-a');
    assert.equal(ofA.length, 5);
    const pagesOfA = await pageThrough(app, 2, '&server_id=vm-a');
    assert.deepEqual(
      pagesOfA.map((p) => p.length),
      [2, 2, 1],
    );
    assert.deepEqual(pagesOfA.flat(), ofA);

    // Heat's paging: the marker need only exist in the project; the filter still applies after it (all[1] is of vm-b).
    const afterSecond = await listIds(app, `&server_id=vm-a&marker=${all[1]!}`);
    assert.deepEqual(
      afterSecond,
      ofA.filter((id) => all.indexOf(id) > 1),
    );
  } finally {
    await done();
  }
});

test('deployments list: an unknown marker is a coded 404, as for configs', async () => {
  const { app, done } = await testApp();
  try {
    const configId = await createConfig(app);
    await createDeployment(app, configId, 'vm-a');
    const unknown = '0190f0a0-0000-7000-8000-000000000000';
    const reply = await app.inject({ url: `/v1/default/software_deployments?marker=${unknown}`, headers: ADMIN });
    assert.equal(reply.statusCode, 404, reply.body);
    assert.equal(errorCode(reply), 'ERR_DEPLOYMENT_NOT_FOUND');
    assert.match(reply.json<{ error: { message: string } }>().error.message, new RegExp(unknown));
    const filtered = await app.inject({ url: `/v1/default/software_deployments?server_id=vm-a&marker=${unknown}`, headers: ADMIN });
    assert.equal(filtered.statusCode, 404, filtered.body);
    const configs = await app.inject({ url: `/v1/default/software_configs?marker=${unknown}`, headers: ADMIN });
    assert.equal(configs.statusCode, 404, configs.body);
  } finally {
    await done();
  }
});

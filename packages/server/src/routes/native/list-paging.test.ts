// Paging the operator lists through the API when many rows share a creation millisecond (a batch
// of deployments, configs made by a script): every row comes once, in the order of the whole list.
// Also the page size bounds: the hearth lists refuse a limit above their maximum with a coded 400,
// Heat's lists (configs, deployments) take any limit, as Heat does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ADMIN, errorCode, testApp } from '../../test-support.ts';

const AT = '2026-01-01T00:00:00.000Z';

/** Inserts 12 configs and 40 deployments (two servers), each lot in one millisecond, ids in no order. */
async function fillTies(app: FastifyInstance): Promise<void> {
  await app.services.store.write(async ({ trx }) => {
    const configs = Array.from({ length: 12 }, (_, i) => ({
      id: randomUUID(),
      project_id: 'default',
      name: `c${i}`,
      group_name: 'script',
      config: '"true"',
      inputs: '[]',
      outputs: '[]',
      options: '{}',
      created_at: AT,
    }));
    await trx.insertInto('software_configs').values(configs).execute();
    const deployments = Array.from({ length: 40 }, (_, i) => ({
      id: randomUUID(),
      project_id: 'default',
      server_id: i % 3 ? 'vm-a' : 'vm-b',
      config_id: configs[0]!.id,
      derived_config_id: randomUUID(),
      derived_at: AT,
      name: null,
      action: 'CREATE',
      status: 'COMPLETE',
      status_reason: 'done',
      input_values: '{}',
      output_values: null,
      signal_transport: 'NO_SIGNAL',
      timeout_s: 60,
      deadline_at: null,
      fetched_at: null,
      last_heartbeat_at: null,
      // Two thirds in one millisecond, the rest in the next.
      created_at: i % 3 === 2 ? '2026-01-01T00:00:00.001Z' : AT,
      updated_at: null,
      stack_id: null,
      stack_name: null,
      resource_name: null,
      access_key_id: null,
    }));
    await trx.insertInto('software_deployments').values(deployments).execute();
  });
}

/** The ids of a list (`key` of the reply), whole and then page by page of `limit` after the last id. */
async function wholeAndPaged(
  app: FastifyInstance,
  path: string,
  key: string,
  limit: number,
): Promise<{ whole: string[]; paged: string[] }> {
  const ids = async (url: string) => {
    const reply = await app.inject({ url, headers: ADMIN });
    assert.equal(reply.statusCode, 200, reply.body);
    return reply.json<Record<string, { id: string }[]>>()[key]!.map((row) => row.id);
  };
  const join = path.includes('?') ? '&' : '?';
  const whole = await ids(path);
  const paged: string[] = [];
  for (let turn = 0; turn < 100; turn++) {
    const page = await ids(`${path}${join}limit=${limit}${paged.length ? `&marker=${paged.at(-1)!}` : ''}`);
    assert.ok(page.length <= limit);
    paged.push(...page);
    if (page.length < limit) break;
  }
  return { whole, paged };
}

test('deployments and configs made in one millisecond page by marker each once, in list order', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await fillTies(app);
    for (const [path, key, count] of [
      ['/v1/default/software_deployments', 'software_deployments', 40],
      ['/v1/default/software_deployments?server_id=vm-a', 'software_deployments', 26],
      ['/v1/default/software_configs', 'software_configs', 12],
    ] as const) {
      const { whole, paged } = await wholeAndPaged(app, path, key, 3);
      assert.equal(whole.length, count, path);
      assert.equal(new Set(whole).size, count, path);
      assert.deepEqual(paged, whole, path);
    }
  } finally {
    await done();
  }
});

test('a list limit above the maximum: a coded 400 for hearth’s lists, the whole list for Heat’s', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await fillTies(app);
    for (const url of [
      '/v1/default/events?limit=1001',
      '/v1/default/servers?limit=1001',
      '/v1/default/stacks?limit=1001',
      '/v1/default/events?limit=0',
    ]) {
      const reply = await app.inject({ url, headers: ADMIN });
      assert.equal(reply.statusCode, 400, `${url}: ${reply.body}`);
      assert.equal(errorCode(reply), 'ERR_REQUEST_INVALID', reply.body);
    }
    // heatclient passes big limits; they are clamped, not refused.
    const deployments = await app.inject({ url: '/v1/default/software_deployments?limit=1000000000000', headers: ADMIN });
    assert.equal(deployments.statusCode, 200, deployments.body);
    assert.equal(deployments.json<{ software_deployments: unknown[] }>().software_deployments.length, 40);
    const configs = await app.inject({ url: '/v1/default/software_configs?limit=1000000000000', headers: ADMIN });
    assert.equal(configs.statusCode, 200, configs.body);
    assert.equal(configs.json<{ software_configs: unknown[] }>().software_configs.length, 12);
  } finally {
    await done();
  }
});

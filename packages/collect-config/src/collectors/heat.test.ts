import { test } from 'node:test';
import assert from 'node:assert/strict';
import { contextFor, fakeServer, optionsFor, sendJson } from '../test-support/fixtures.ts';
import { heatCollector } from './heat.ts';

const METADATA = { deployments: [{ name: 'cfg', group: 'os-apply-config', config: { a: 1 } }] };

async function keystoneAndHeat() {
  const server = await fakeServer((request, response) => {
    if (request.method === 'POST' && request.url === '/identity/v3/auth/tokens') {
      const auth = JSON.parse(request.body).auth;
      if (auth.identity.password.user.password !== 'pw' || auth.scope.project.id !== 'prj') return sendJson(response, 401, { error: {} });
      return sendJson(
        response,
        201,
        {
          token: {
            catalog: [
              { type: 'identity', endpoints: [{ interface: 'public', url: `${server.url}/identity` }] },
              {
                type: 'orchestration',
                endpoints: [
                  { interface: 'internal', url: 'http://127.0.0.1:9/wrong' },
                  { interface: 'public', region: 'other', url: 'http://127.0.0.1:9/other' },
                  { interface: 'public', region: 'r1', url: `${server.url}/heat/v1/prj/` },
                ],
              },
            ],
          },
        },
        { 'x-subject-token': 'tok-1' },
      );
    }
    if (request.url === '/heat/v1/prj/stacks/web') {
      response.writeHead(302, { location: `${server.url}/heat/v1/prj/stacks/web/sid` });
      return void response.end();
    }
    if (request.url === '/heat/v1/prj/stacks/web/sid/resources/vm1/metadata' && request.headers['x-auth-token'] === 'tok-1') {
      return sendJson(response, 200, { metadata: METADATA });
    }
    sendJson(response, 404, {});
  });
  return server;
}

const argv = (url: string, stack = 'web/sid', password = 'pw') => [
  '--heat-auth-url',
  `${url}/identity/v3`,
  '--heat-user-id',
  'u1',
  '--heat-password',
  password,
  '--heat-project-id',
  'prj',
  '--heat-stack-id',
  stack,
  '--heat-resource-name',
  'vm1',
  '--heat-region-name',
  'r1',
];

test('heat: keystone v3 password token scoped by project id, then the resource metadata, exploded', async () => {
  const server = await keystoneAndHeat();
  try {
    const outcome = await heatCollector.collect(contextFor(optionsFor(argv(server.url))));
    assert.deepEqual(outcome, {
      kind: 'data',
      outputs: [
        ['heat', METADATA],
        ['cfg', { a: 1 }],
      ],
    });
    const auth = JSON.parse(server.requests[0]!.body).auth;
    assert.deepEqual(auth.identity, { methods: ['password'], password: { user: { id: 'u1', password: 'pw' } } });
    assert.deepEqual(
      server.requests.map((r) => `${r.method} ${r.url}`),
      ['POST /identity/v3/auth/tokens', 'GET /heat/v1/prj/stacks/web/sid/resources/vm1/metadata'],
    );
    const byName = await heatCollector.collect(contextFor(optionsFor(argv(server.url, 'web'))));
    assert.equal(byName.kind, 'data', 'a bare stack name is resolved through the 302');
  } finally {
    await server.close();
  }
});

test('heat: a refused password is unavailable; missing settings are "not configured"', async () => {
  const server = await keystoneAndHeat();
  try {
    assert.deepEqual(await heatCollector.collect(contextFor(optionsFor(argv(server.url, 'web/sid', 'bad')))), {
      kind: 'unavailable',
      reason: 'keystone refused the credentials (401)',
    });
    const partial = await heatCollector.collect(contextFor(optionsFor(['--heat-auth-url', server.url])));
    assert.equal(partial.kind, 'not-configured');
    assert.match((partial as { reason: string }).reason, /user_id, password, project_id, stack_id, resource_name/);
  } finally {
    await server.close();
  }
});

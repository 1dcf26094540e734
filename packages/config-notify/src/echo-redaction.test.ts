// A server that echoes the request back in its error reply (a debugging proxy, a misconfigured
// keystone) must not get the HEAT_SIGNAL password or the keystone token into heat-config-notify's log:
// the rejection reason quotes the reply, so the echoed JSON body and X-Auth-Token header used to be logged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deploymentWith, runNotify, startFake, type RecordedRequest } from './test-support.ts';

const PASSWORD = 'Echoed-Pw"7\\zq';
const TOKEN = 'echoed-keystone-token-5f1c';

/** The request as a debugging server prints it: request line, headers, body. */
function echo(request: RecordedRequest): string {
  const headers = Object.entries(request.headers).map(([name, value]) => `${name}: ${String(value)}`);
  return `${request.method} ${request.url} HTTP/1.1\n${headers.join('\n')}\n\n${request.body.toString()}`;
}

for (const format of ['json', 'text'] as const) {
  for (const where of ['keystone', 'heat'] as const) {
    test(`HEAT_SIGNAL, ${format} log: a ${where} that echoes the request in a 400 gets no password or token logged`, async () => {
      const fake = await startFake((request) => {
        if (where === 'heat' && request.url.endsWith('/auth/tokens')) {
          const catalog = [{ type: 'orchestration', endpoints: [{ interface: 'public', url: `${fake.url}/heat/v1/proj1` }] }];
          return { status: 201, headers: { 'x-subject-token': TOKEN }, body: JSON.stringify({ token: { catalog } }) };
        }
        // Plain text, and the same again inside a JSON error, as a proxy and an API would put it.
        const text = echo(request);
        return { status: 400, body: request.url.endsWith('/signal') ? text : JSON.stringify({ error: { message: text } }) };
      });
      const root = mkdtempSync(join(tmpdir(), 'hcn-echo-'));
      try {
        const deployment = join(root, 'd.json');
        writeFileSync(
          deployment,
          JSON.stringify(
            deploymentWith({
              deploy_signal_transport: 'HEAT_SIGNAL',
              deploy_auth_url: `${fake.url}/v3`,
              deploy_user_id: 'u1',
              deploy_password: PASSWORD,
              deploy_project_id: 'proj1',
              deploy_stack_id: 'web/5b6c',
              deploy_resource_name: 'res',
            }),
          ),
        );
        const env = { ...process.env, HEARTH_OUTBOX_DIR: join(root, 'outbox') };
        const { code, stderr } = await runNotify(
          ['--log-format', format, '--log-level', 'debug', deployment],
          env,
          '{"deploy_status_code":0}',
        );
        assert.equal(code, 1, stderr);
        assert.equal(fake.requests.length, where === 'heat' ? 2 : 1);
        // The request really carried the secrets the server echoed.
        assert.ok(fake.requests[0]!.body.toString().includes(JSON.stringify(PASSWORD)));
        if (where === 'heat') assert.equal(fake.requests[1]!.headers['x-auth-token'], TOKEN);
        assert.match(stderr, /answered 400/, 'the reason is still logged');
        for (const secret of [PASSWORD, JSON.stringify(PASSWORD).slice(1, -1), 'Echoed-Pw', TOKEN])
          assert.ok(!stderr.includes(secret), `${secret} in the log:\n${stderr}`);
      } finally {
        rmSync(root, { recursive: true, force: true });
        await fake.close();
      }
    });
  }
}

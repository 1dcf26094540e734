// heat-config-notify (the bin, as a process) handed what another dispatcher (Heat's 55-heat-config) passes on as
// it is: a hook's JSON with values hearth-server refuses. The signal must still complete the deployment on a real
// hearth-server on 127.0.0.1, the refused values sent as their JSON text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childEnv, operatorCall, startServer, type TestServer } from '../../../test/helpers/server.ts';
import { runNotify } from './test-support.ts';

const OUTPUTS = ['deep', 'n', 'constructor', 'ok', 'huge'];

function call(server: TestServer, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  return operatorCall<Record<string, unknown>>(server, method, `/v1/default${path}`, body);
}

interface Deployment {
  id: string;
  status: string;
  status_reason: string | null;
  output_values: Record<string, unknown> | null;
}

/** A deployment over `transport` and its derived config as the metadata serves it. */
async function deploy(server: TestServer, transport: string, name: string): Promise<{ id: string; derived: unknown }> {
  const vm = (await call(server, 'POST', '/servers', { name, software_config_transport: 'HEARTH_LONG_POLL' })).server as { id: string };
  const outputs = OUTPUTS.map((output) => ({ name: output }));
  const config = (await call(server, 'POST', '/software_configs', { name, group: 'script', config: '#!/bin/sh\n', outputs }))
    .software_config as { id: string };
  const deployment = (
    await call(server, 'POST', '/software_deployments', { config_id: config.id, server_id: vm.id, signal_transport: transport })
  ).software_deployment as Deployment;
  const metadata = (await call(server, 'GET', `/software_deployments/metadata/${vm.id}`)).metadata as unknown[];
  return { id: deployment.id, derived: metadata[0] };
}

const notify = runNotify;

test(
  'a result with values hearth-server refuses still completes the deployment, those values sent as JSON text',
  { timeout: 120_000 },
  async () => {
    const server = await startServer();
    const root = mkdtempSync(join(tmpdir(), 'hcn-sendable-'));
    const env = childEnv({
      HEARTH_OUTBOX_DIR: join(root, 'outbox'),
      HEARTH_NOTIFY_RETRY_BASE_MS: '100',
      HEARTH_NOTIFY_RETRY_CAP_MS: '500',
    });
    try {
      for (const transport of ['HEARTH_SIGNAL', 'HEAT_SIGNAL']) {
        const { id, derived } = await deploy(server, transport, `refused-${transport}`);
        const file = join(root, `${transport}.json`);
        writeFileSync(file, JSON.stringify(derived), { mode: 0o600 });
        const deep = `${'['.repeat(150)}${']'.repeat(150)}`;
        const signal =
          `{"deploy_stdout": ["a", 1], "deploy_stderr": "log\\n", "deploy_status_code": 0, "__proto__": {"deploy_status_code": 7},` +
          ` "deep": {"a": ${deep}}, "n": [1e400], "constructor": {"prototype": 1}, "ok": [[1]],` +
          ` "huge": ${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
        const run = await notify(['--wait', file], env, signal);
        assert.equal(run.code, 0, `${transport}: ${run.stderr}`);
        assert.doesNotMatch(run.stderr, /"msg":"[^"]*(400|refused)/, transport);
        const deployment = (await call(server, 'GET', `/software_deployments/${id}`)).software_deployment as Deployment;
        assert.equal(deployment.status, 'COMPLETE', `${transport}: ${deployment.status_reason}`);
        const values = deployment.output_values ?? {};
        assert.equal(values.deploy_stdout, '["a",1]');
        assert.equal(values.deep, `{"a":${deep}}`);
        assert.equal(values.n, '["Infinity"]');
        assert.equal(values.constructor, '{"prototype":1}');
        assert.deepEqual(values.ok, [[1]]);
        assert.equal(values.huge, '[heat-config-notify: the value is nested too deep to write as JSON]');
        assert.equal(
          values.deploy_stderr,
          'log\n' +
            '[heat-config-notify: deploy_stdout was sent as JSON text: it is not text]\n' +
            '[heat-config-notify: __proto__ was left out of the signal: hearth-server refuses that key]\n' +
            '[heat-config-notify: deep was sent as JSON text: it is nested deeper than 100 levels]\n' +
            '[heat-config-notify: n was sent as JSON text: it is or holds a number too large for JSON]\n' +
            '[heat-config-notify: constructor was sent as JSON text: it holds a key named constructor with a prototype key]\n' +
            '[heat-config-notify: huge was sent as JSON text: it is nested deeper than 100 levels]\n',
          transport,
        );
      }
    } finally {
      await server.close();
      rmSync(root, { recursive: true, force: true });
    }
  },
);

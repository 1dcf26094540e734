// What a hook produced against what the operator reads back, through the whole real loop on loopback:
// hearth-server -> os-collect-config -> heat-config -> a hook -> heat-config-notify -> the signal ->
// the deployment's output_values and events. The script hook for text a script prints, and a hook of
// this test's own (`raw`, which prints the bytes it is given) for results a hook writes itself.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentLoop, bundleAgents, type AgentLoop } from '../helpers/agent-loop.ts';
import { freePort, removeServerData, spawnServer, type ServerProcess, operatorCall } from '../helpers/server.ts';

let server: ServerProcess;
let dataDir: string;
let loop: AgentLoop;
let serverId: string;

interface Deployment {
  id: string;
  status: string;
  status_reason: string | null;
  output_values: Record<string, unknown> | null;
}

function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  return operatorCall<T>(server, method, path, body);
}

/** Creates a config and its deployment on the test's server; resolves once it settled (or fails after 60 s). */
async function deploy(group: string, config: string, outputs: Array<{ name: string }> = []): Promise<Deployment> {
  const { software_config: c } = await api<{ software_config: { id: string } }>('POST', '/v1/default/software_configs', {
    group,
    config,
    outputs,
  });
  const { software_deployment: d } = await api<{ software_deployment: { id: string } }>('POST', '/v1/default/software_deployments', {
    config_id: c.id,
    server_id: serverId,
  });
  const until = Date.now() + 60_000;
  for (;;) {
    const { software_deployment: got } = await api<{ software_deployment: Deployment }>(
      'GET',
      `/v1/default/software_deployments/${d.id}?wait=5`,
    );
    if (got.status !== 'IN_PROGRESS') return got;
    if (Date.now() > until) throw new Error(`deployment ${d.id} still IN_PROGRESS after 60 s; agent log tail:\n${loop.log().slice(-3000)}`);
  }
}

/** A deployment of the `raw` hook, which prints exactly `stdout` as its result. */
const raw = (stdout: string, outputs: Array<{ name: string }> = []) => deploy('raw', Buffer.from(stdout).toString('base64'), outputs);

before(async () => {
  bundleAgents();
  dataDir = mkdtempSync(join(tmpdir(), 'hearth-fidelity-'));
  server = await spawnServer(dataDir, await freePort());
  const created = await api<{ server: { id: string }; os_collect_config_conf: string }>('POST', '/v1/default/servers', { name: 'vm' });
  serverId = created.server.id;
  loop = agentLoop(created.os_collect_config_conf);
  // heat-config also looks for hooks in <root>/var/lib/heat-config/hooks. This one counts its runs.
  const hooks = join(loop.root, 'fs/var/lib/heat-config/hooks');
  mkdirSync(hooks, { recursive: true });
  writeFileSync(
    join(hooks, 'raw'),
    `#!/bin/sh\necho run >> "${join(loop.root, 'raw-runs')}"\nexec "${process.execPath}" -e 'let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => process.stdout.write(Buffer.from(JSON.parse(s).config, "base64")))'\n`,
  );
  chmodSync(join(hooks, 'raw'), 0o755);
  loop.start();
});

after(async () => {
  await loop?.close();
  server?.child.kill('SIGKILL');
  await server?.exited;
  await removeServerData(dataDir);
});

test('what a script prints comes back as it was: any Unicode, NUL, CR/LF, trailing newlines; invalid UTF-8 as U+FFFD', async () => {
  const done = await deploy(
    'script',
    '#!/bin/sh\n' +
      "printf 'é 中文 😀 a\\000b\\r\\nline\\n\\n'\n" +
      "printf 'bad \\377\\376 latin1 \\351\\n' >&2\n" +
      'printf \'v\\n\\n\' > "$heat_outputs_path.out"\n' +
      ': > "$heat_outputs_path.empty"\n' +
      'printf 1 > "$heat_outputs_path.a b.é"\n' +
      'exit 3\n',
    [{ name: 'out' }, { name: 'empty' }, { name: 'a b.é' }, { name: 'missing' }],
  );
  assert.equal(done.status, 'FAILED');
  assert.deepEqual(done.output_values, {
    out: 'v\n\n',
    empty: '',
    'a b.é': '1',
    deploy_stdout: 'é 中文 😀 a\u0000b\r\nline\n\n',
    deploy_stderr: 'bad \ufffd\ufffd latin1 \ufffd\n',
    deploy_status_code: 3,
  });
});

test('a hook result hearth-server would refuse (too deep, deploy_stdout not text) arrives: values as JSON text, deploy_stderr saying so', async () => {
  const deep = `${'['.repeat(150)}${']'.repeat(150)}`;
  const done = await raw(`{"deploy_status_code": 0, "deploy_stdout": ["ok", 1], "tree": {"t": ${deep}}, "flat": [1, "é"]}`, [
    { name: 'tree' },
    { name: 'flat' },
  ]);
  assert.equal(done.status, 'COMPLETE', done.status_reason ?? '');
  assert.equal(done.output_values?.tree, `{"t":${deep}}`);
  assert.deepEqual(done.output_values?.flat, [1, 'é']);
  assert.equal(done.output_values?.deploy_stdout, '["ok",1]');
  assert.equal(
    done.output_values?.deploy_stderr,
    '[heat-config: deploy_stdout was sent as JSON text: it is not text]\n' +
      '[heat-config: tree was sent as JSON text: it is nested deeper than 100 levels]\n',
  );
});

test('a result too deep for heat-config to write as JSON is signalled once; the hook does not run again on every poll', async () => {
  const depth = 100_000;
  const runsBefore = readFileSync(join(loop.root, 'raw-runs'), 'utf8').split('\n').filter(Boolean).length;
  const done = await raw(`{"deploy_status_code": 0, "o": ${'['.repeat(depth)}${']'.repeat(depth)}}`, [{ name: 'o' }]);
  assert.equal(done.status, 'COMPLETE', done.status_reason ?? '');
  assert.equal(done.output_values?.o, '[heat-config: the value is nested too deep to write as JSON]');
  assert.match(String(done.output_values?.deploy_stderr), /o was sent as JSON text: it is nested deeper than 100 levels/);
  await new Promise((resolve) => setTimeout(resolve, 6000)); // a poll or more later
  assert.equal(readFileSync(join(loop.root, 'raw-runs'), 'utf8').split('\n').filter(Boolean).length, runsBefore + 1);
});

test('deploy_status_code past JSON range (1e400) or with a NUL fails the deployment instead of passing or being lost', async () => {
  const huge = await raw('{"deploy_status_code": 1e400, "n": 1e400}', [{ name: 'n' }]);
  assert.equal(huge.status, 'FAILED');
  assert.equal(huge.status_reason, 'deploy_status_code : Deployment exited with non-zero status code: Infinity');
  assert.equal(huge.output_values?.n, 'Infinity');

  const nul = await raw('{"deploy_status_code": "1\\u0000", "deploy_stdout": "x"}');
  assert.equal(nul.status, 'FAILED');
  assert.equal(nul.status_reason, 'deploy_status_code : Deployment exited with non-zero status code: 1\\u0000');
  assert.equal(nul.output_values?.deploy_status_code, '1\u0000');
  const { events } = await api<{ events: Array<{ type: string; message: string }> }>('GET', `/v1/default/events?resource_id=${nul.id}`);
  assert.ok(
    events.some((e) => e.type === 'deployment.failed' && e.message.includes('(status code 1\\u0000)')),
    JSON.stringify(events),
  );
});

// End-to-end: this package's cfn-signal, as a real process, against a real hearth-server on 127.0.0.1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../../../../test/helpers/server.ts';
import { operatorApi } from '../../../../test/conformance/clients.ts';
import { runBin } from '../shared/run-bin.ts';

const env = { HEARTH_ROOT: mkdtempSync(join(tmpdir(), 'cfn-signal-e2e-')) };

test('cfn-signal completes a hearth wait condition (count 2: SUCCESS from two ids, data from a file)', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const api = operatorApi(server);
  await api.createStack('web');
  const url = (await api.createWaitCondition('web', { name: 'ready', count: 2, timeout: 600 })).handle.cfn_url;
  const dataFile = join(env.HEARTH_ROOT, 'data.txt');
  writeFileSync(dataFile, 'from a file');

  const first = await runBin('cfn-signal', ['-i', 'vm1', '-r', 'ok', '-d', 'data-1', url], { env });
  assert.equal(first.code, 0, first.stderr);
  assert.equal((await api.waitCondition('web', 'ready')).status, 'IN_PROGRESS');
  const second = await runBin('cfn-signal', ['-i', 'vm2', '-d', `@${dataFile}`, url], { env });
  assert.equal(second.code, 0, second.stderr);

  const done = await api.waitCondition('web', 'ready');
  assert.equal(done.status, 'COMPLETE');
  assert.deepEqual(done.data, { vm1: 'data-1', vm2: 'from a file' });
  assert.deepEqual(
    done.signals.map((s) => [s.id, s.status, s.reason]),
    [
      ['vm1', 'SUCCESS', 'ok'],
      ['vm2', 'SUCCESS', 'Configuration Complete'],
    ],
  );
});

test('cfn-signal -e 3 fails the condition; a late signal is refused and exits non-zero with the status', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const api = operatorApi(server);
  await api.createStack('web');
  const url = (await api.createWaitCondition('web', { name: 'ready', count: 2, timeout: 600 })).handle.cfn_url;
  assert.equal((await runBin('cfn-signal', ['-i', 'vm1', '-e', '3', '-r', 'disk full', url], { env })).code, 0);
  const failed = await api.waitCondition('web', 'ready');
  assert.equal(failed.status, 'FAILED');
  assert.match(failed.status_reason ?? '', /disk full/);

  const late = await runBin('cfn-signal', ['-i', 'vm2', url], { env });
  assert.equal(late.code, 1);
  assert.match(late.stderr, /not acknowledged: status 409/);
});

test('a tampered handle URL gets 403: cfn-signal exits 1 printing the status and reason, without the signature', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const api = operatorApi(server);
  await api.createStack('web');
  const url = (await api.createWaitCondition('web', { name: 'ready', count: 1, timeout: 600 })).handle.cfn_url;
  const signature = /[?&]Signature=([^&]*)/.exec(url)![1]!;
  const decoded = decodeURIComponent(signature);
  const tampered = url.replace(
    `Signature=${signature}`,
    `Signature=${encodeURIComponent((decoded.startsWith('A') ? 'B' : 'A') + decoded.slice(1))}`,
  );

  const run = await runBin('cfn-signal', ['-i', 'vm1', '--retries', '0', tampered], { env });
  assert.equal(run.code, 1);
  assert.match(run.stderr, /status 403/);
  assert.ok(!run.stderr.includes(decoded.slice(1)), 'the signature is not printed');
  assert.equal((await api.waitCondition('web', 'ready')).status, 'IN_PROGRESS');
});

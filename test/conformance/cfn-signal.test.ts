// Debian's cfn-signal (heat-cfntools) against hearth-server's CFN wait-condition handle.
// cfn-signal exits 0 whatever the HTTP status, so every test asserts on the server's state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../helpers/server.ts';
import { operatorApi, runClient, skipUnlessClients, type ClientResult } from './clients.ts';

const skip = skipUnlessClients();

function assertDelivered(run: ClientResult): void {
  assert.equal(run.exitCode, 0, `cfn-signal could not reach the server:\n${run.stderr}`);
}

/** The URL with one character of its Signature changed (everything else byte for byte as issued). */
function tamperSignature(url: string): string {
  const match = /([?&]Signature=)([^&]*)/.exec(url);
  assert.ok(match, `no Signature in ${url}`);
  const signature = decodeURIComponent(match[2]!);
  const tampered = (signature.startsWith('A') ? 'B' : 'A') + signature.slice(1);
  return url.slice(0, match.index) + match[1]! + encodeURIComponent(tampered) + url.slice(match.index + match[0].length);
}

test('cfn-signal: two SUCCESS signals complete a count-2 wait condition with each id’s data', { skip }, async () => {
  const server = await startServer();
  try {
    const api = operatorApi(server);
    await api.createStack('web');
    const created = await api.createWaitCondition('web', { name: 'ready', count: 2, timeout: 600 });
    assert.equal(created.status, 'IN_PROGRESS');
    const url = created.handle.cfn_url;

    assertDelivered(await runClient(['cfn-signal', '-i', 'vm1', '-r', 'ok', '-d', 'data-1', url]));
    const half = await api.waitCondition('web', 'ready');
    assert.equal(half.status, 'IN_PROGRESS');
    assert.equal(half.received, 1);

    assertDelivered(await runClient(['cfn-signal', '-i', 'vm2', '-r', 'ok', '-d', 'data-2', url]));
    const done = await api.waitCondition('web', 'ready');
    assert.equal(done.status, 'COMPLETE');
    assert.equal(done.received, 2);
    assert.deepEqual(done.data, { vm1: 'data-1', vm2: 'data-2' });
    assert.deepEqual(
      done.signals.map((s) => [s.id, s.status, s.reason]),
      [
        ['vm1', 'SUCCESS', 'ok'],
        ['vm2', 'SUCCESS', 'ok'],
      ],
    );
  } finally {
    await server.close();
  }
});

test('cfn-signal -e 3: the condition FAILS with the reason, and a later SUCCESS changes nothing (409)', { skip }, async () => {
  const server = await startServer();
  try {
    const api = operatorApi(server);
    await api.createStack('web');
    const url = (await api.createWaitCondition('web', { name: 'ready', count: 2, timeout: 600 })).handle.cfn_url;

    assertDelivered(await runClient(['cfn-signal', '-i', 'vm1', '-e', '3', '-r', 'disk full', url]));
    const failed = await api.waitCondition('web', 'ready');
    assert.equal(failed.status, 'FAILED');
    assert.match(failed.status_reason ?? '', /disk full/);
    assert.equal(failed.received, 1);

    assertDelivered(await runClient(['cfn-signal', '-i', 'vm2', '-r', 'ok', '-d', 'late', url]));
    assert.deepEqual(await api.waitCondition('web', 'ready'), failed, 'a signal after FAILED leaves the condition as it was');

    // What cfn-signal cannot show: the status on the wire (same body, no Content-Type).
    const late = await fetch(url, {
      method: 'PUT',
      body: new Blob([JSON.stringify({ Status: 'SUCCESS', Reason: 'ok', UniqueId: 'vm2', Data: 'late' })]),
    });
    assert.equal(late.status, 409);
  } finally {
    await server.close();
  }
});

test('cfn-signal with a tampered Signature changes nothing; the URL as issued still works', { skip }, async () => {
  const server = await startServer();
  try {
    const api = operatorApi(server);
    await api.createStack('web');
    const url = (await api.createWaitCondition('web', { name: 'ready', count: 1, timeout: 600 })).handle.cfn_url;

    assertDelivered(await runClient(['cfn-signal', '-i', 'vm1', '-r', 'ok', '-d', 'forged', tamperSignature(url)]));
    const untouched = await api.waitCondition('web', 'ready');
    assert.equal(untouched.status, 'IN_PROGRESS');
    assert.equal(untouched.received, 0);
    assert.deepEqual(untouched.data, {});

    // Control: the same run with the URL as issued is counted, so the denial above was the signature's.
    assertDelivered(await runClient(['cfn-signal', '-i', 'vm1', '-r', 'ok', '-d', 'real', url]));
    const done = await api.waitCondition('web', 'ready');
    assert.equal(done.status, 'COMPLETE');
    assert.deepEqual(done.data, { vm1: 'real' });
  } finally {
    await server.close();
  }
});

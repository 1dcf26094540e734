import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { signV2 } from '@hearth/protocol/signing';
import { ADMIN, testApp } from '../../test-support.ts';
import { parseSampleTime } from '../../domain/metrics.ts';

/** Runs `body` with the process in time zone `zone` (Node reads TZ again when it is set). */
async function inTimeZone<T>(zone: string, body: () => Promise<T>): Promise<T> {
  const before = process.env.TZ;
  process.env.TZ = zone;
  try {
    return await body();
  } finally {
    if (before === undefined) delete process.env.TZ;
    else process.env.TZ = before;
  }
}

/** A server listening on 127.0.0.1, with one VM's credential. */
async function listening() {
  const { app, done } = await testApp();
  await app.listen({ host: '127.0.0.1', port: 0 });
  const host = `127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const reply = await fetch(`http://${host}/v1/default/servers`, {
    method: 'POST',
    headers: { ...ADMIN, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'vm' }),
  });
  const vm = (await reply.json()) as { credential: { access_key_id: string; secret_access_key: string; token: string } };
  return { host, vm: vm.credential, done };
}

async function samples(host: string): Promise<Array<{ value: number; time: string }>> {
  const listed = await fetch(`http://${host}/v1/default/metrics?metric_name=Load`, { headers: ADMIN });
  return ((await listed.json()) as { samples: Array<{ value: number; time: string }> }).samples;
}

test('a PutMetricData Timestamp without an offset is UTC (boto sends naive utcnow()), whatever the server time zone', async () => {
  const { host, vm, done } = await listening();
  try {
    // Ten minutes ago, as Python's datetime.utcnow().isoformat() prints it: no offset, microseconds.
    const at = new Date(Math.floor(Date.now() / 1000) * 1000 - 600_000);
    const naive = `${at.toISOString().slice(0, 19)}.250000`;
    // The same instant with an offset, as an aware datetime prints it.
    const withOffset = `${new Date(at.getTime() + 330 * 60_000).toISOString().slice(0, 19)}+05:30`;
    for (const [zone, value, timestamp] of [
      ['Asia/Tokyo', 1, naive],
      ['America/New_York', 2, naive],
      ['America/New_York', 3, withOffset],
    ] as const) {
      const reply = await inTimeZone(zone, async () => {
        const params: Record<string, string> = {
          Action: 'PutMetricData',
          Version: '2010-08-01',
          AWSAccessKeyId: vm.access_key_id,
          SignatureVersion: '2',
          SignatureMethod: 'HmacSHA256',
          Timestamp: new Date().toISOString(),
          Namespace: 'system/linux',
          'MetricData.member.1.MetricName': 'Load',
          'MetricData.member.1.Value': String(value),
          'MetricData.member.1.Timestamp': timestamp,
        };
        params.Signature = signV2(vm.secret_access_key, 'sha256', 'POST', host, '/v1/', params);
        return fetch(`http://${host}/v1/`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
          body: new URLSearchParams(params).toString(),
        });
      });
      assert.equal(reply.status, 200, `${zone}: ${await reply.text()}`);
    }
    const stored = await samples(host);
    const expected = at.toISOString().replace('.000Z', 'Z');
    assert.deepEqual(
      stored.map((s) => [s.value, s.time]).sort(),
      [
        [1, expected],
        [2, expected],
        [3, expected],
      ],
      'stored at the time sent, in Tokyo as in New York',
    );
  } finally {
    await done();
  }
});

test('a sample timestamp that names no real day (30 February) or time is a coded 400 on put and list, not rolled over', async () => {
  const { host, vm, done } = await listening();
  const put = (timestamp: string) =>
    fetch(`http://${host}/v1/guest/metrics`, {
      method: 'POST',
      headers: { authorization: `Bearer ${vm.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        samples: [
          { metric_name: 'Load', value: 1 },
          { metric_name: 'Load', value: 2, timestamp },
        ],
      }),
    });
  try {
    const year = new Date().getUTCFullYear();
    for (const bad of [`${year}-02-30T00:00:00Z`, `${year}-04-31T12:00:00Z`, `${year}-01-01T24:00:01Z`, `${year}-01-01T12:60:00Z`]) {
      const reply = await put(bad);
      assert.equal(reply.status, 400, bad);
      const body = (await reply.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'ERR_METRIC_INVALID', bad);
      assert.match(body.error.message, /which is not a date and time/, bad);
      const listed = await fetch(`http://${host}/v1/default/metrics?since=${bad}`, { headers: ADMIN });
      assert.equal(listed.status, 400, `since=${bad}`);
    }
    assert.deepEqual(await samples(host), [], 'the refused puts stored nothing');
  } finally {
    await done();
  }
});

test('parseSampleTime: ISO 8601 with or without fraction and offset; no offset is UTC; days that do not exist are null', () => {
  const utc = Date.UTC(2028, 1, 29, 23, 59, 59, 120);
  assert.equal(parseSampleTime('2028-02-29T23:59:59.12Z'), utc);
  assert.equal(parseSampleTime('2028-02-29T23:59:59.120999'), utc);
  assert.equal(parseSampleTime('2028-03-01T01:29:59.12+0130'), utc);
  assert.equal(parseSampleTime('2028-02-29T20:59:59.12-03:00'), utc);
  for (const bad of [
    '2027-02-29T00:00:00Z',
    '2028-02-30T00:00:00Z',
    '2028-02-29',
    '1',
    'Feb 29 2028 10:00',
    '2028-02-29 10:00:00',
    '2028-02-29T10:00:00+24:00',
    '2028-02-29T24:00:00Z',
  ])
    assert.equal(parseSampleTime(bad), null, bad);
});

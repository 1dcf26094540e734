import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { guardedLookup, hideUserinfo, isForbiddenHost, outboundUrlProblem, shownUrl, type AllAddressesLookup } from './link-local.ts';

/**
 * A hosts-file resolver: names map to fixed addresses and nothing goes to DNS. Records what it was
 * asked, so a test can tell a name refused before resolution from one refused after.
 */
function hostsLookup(hosts: Record<string, string[]>): AllAddressesLookup & { asked: string[] } {
  const asked: string[] = [];
  const lookup = (
    hostname: string,
    _options: unknown,
    callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
  ) => {
    asked.push(hostname);
    const addresses = hosts[hostname];
    if (!addresses) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  };
  return Object.assign(lookup, { asked });
}

/** Calls a socket lookup the way net.connect does and returns what it answered. */
function resolve(lookup: ReturnType<typeof guardedLookup>, hostname: string, all: boolean) {
  return new Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>((done) =>
    lookup(hostname, { all }, (error, address, family) => done({ error, address, family })),
  );
}

test('outbound hosts: metadata service names are refused in every spelling, as link-local addresses are', () => {
  for (const host of [
    'metadata.google.internal',
    'METADATA.Google.Internal',
    'metadata.google.internal.',
    '169.254.169.254',
    '[fe80::1]',
    '[::ffff:a9fe:a9fe]',
    '[fd00:ec2::254]',
  ])
    assert.equal(isForbiddenHost(host), true, host);
  for (const host of ['127.0.0.1', 'localhost', '[::1]', 'metadata.google.internal.example.com', '[fd00:ec2::253]'])
    assert.equal(isForbiddenHost(host), false, host);
});

test('outbound URLs: one rule set with the offending field and URL in the reason', () => {
  assert.equal(outboundUrlProblem('ok_actions', 'http://127.0.0.1:8000/hook'), null);
  assert.match(
    outboundUrlProblem('ok_actions', 'http://metadata.google.internal./computeMetadata/v1/') ?? '',
    /^ok_actions http:\/\/metadata\.google\.internal\.\/computeMetadata\/v1\/: its host metadata\.google\.internal is link-local or a cloud metadata service/,
  );
  assert.match(
    outboundUrlProblem('actuator.url', 'gopher://127.0.0.1/') ?? '',
    /actuator\.url gopher:\/\/127\.0\.0\.1\/ must be http or https/,
  );
  assert.match(outboundUrlProblem('actuator.url', 'http://') ?? '', /actuator\.url "http:\/\/" is not a URL/);
});

test('guarded lookup: a name that resolves to a forbidden address is refused before any connection', async () => {
  const hosts = hostsLookup({
    'rebound.test': ['169.254.169.254'],
    'mixed.test': ['127.0.0.1', '169.254.169.254'],
    'mapped.test': ['::ffff:169.254.169.254'],
    'aws6.test': ['fd00:ec2::254'],
  });
  const lookup = guardedLookup(hosts);
  for (const name of ['rebound.test', 'mixed.test', 'mapped.test', 'aws6.test']) {
    for (const all of [false, true]) {
      const { error } = await resolve(lookup, name, all);
      assert.equal(error?.code, 'ERR_OUTBOUND_ADDRESS_REFUSED', `${name} all=${all}`);
      assert.match(error?.message ?? '', new RegExp(`^not sent: ${name.replace('.', '\\.')} \\(resolves to .+\\) is link-local`));
    }
  }
  const { error } = await resolve(lookup, 'metadata.google.internal.', false);
  assert.equal(error?.code, 'ERR_OUTBOUND_ADDRESS_REFUSED');
  assert.equal(hosts.asked.includes('metadata.google.internal.'), false, 'a forbidden name is not even resolved');
});

test('guarded lookup: allowed names resolve as the socket asked (one address or all), errors pass through', async () => {
  const lookup = guardedLookup(hostsLookup({ 'hook.test': ['127.0.0.1', '::1'] }));
  assert.deepEqual(await resolve(lookup, 'hook.test', false), { error: null, address: '127.0.0.1', family: 4 });
  assert.deepEqual(await resolve(lookup, 'hook.test', true), {
    error: null,
    address: [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ],
    family: undefined,
  });
  assert.equal((await resolve(lookup, 'unknown.test', false)).error?.code, 'ENOTFOUND');
  assert.equal((await resolve(guardedLookup(hostsLookup({ 'empty.test': [] })), 'empty.test', true)).error?.code, 'ENOTFOUND');
});

test('outbound hosts: other clouds metadata services are refused too (Alibaba, Oracle, AWS IPv6, GCE and Tencent names)', () => {
  for (const host of [
    '100.100.100.200',
    '[::ffff:100.100.100.200]',
    '192.0.0.192',
    '[fd00:ec2::254]',
    'metadata.goog',
    'metadata.tencentyun.com.',
  ])
    assert.equal(isForbiddenHost(host), true, host);
  for (const host of ['100.100.100.201', '192.0.0.193', '100.64.0.1']) assert.equal(isForbiddenHost(host), false, host);
  assert.match(outboundUrlProblem('alarm_actions', 'http://100.100.100.200/latest/meta-data/') ?? '', /cloud metadata service/);
});

test('outbound URLs: a user and password in a URL, and secret query values, are never shown in a reason', () => {
  assert.equal(shownUrl('https://hooks:pa55@example.test/x?token=abc&a=1'), 'https://***@example.test/x?token=***&a=1');
  assert.equal(hideUserinfo('https://only-a-token@example.test/x?token=abc'), 'https://***@example.test/x?token=abc');
  assert.equal(shownUrl('http://example.test/a@b'), 'http://example.test/a@b');
  const problem = outboundUrlProblem('alarm_actions', 'http://hooks:pa55@169.254.169.254/') ?? '';
  assert.match(problem, /^alarm_actions http:\/\/\*\*\*@169\.254\.169\.254\/: its host/);
  assert.ok(!problem.includes('pa55'));
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { contextFor, fakeServer, optionsFor, sendJson } from '../test-support/fixtures.ts';
import { comparableLastModified, createRequestCollector, parseHttpDate } from './request.ts';

test('request: HEAD then GET; the document exploded; an older-or-equal Last-Modified is "unchanged"', async () => {
  let lastModified = 'Wed, 25 Nov 2026 10:00:00 GMT';
  const document = { deployments: [{ name: 'd1', group: 'os-apply-config', config: { k: 'v' } }] };
  const server = await fakeServer((_request, response) => sendJson(response, 200, document, { 'last-modified': lastModified }));
  try {
    const collector = createRequestCollector();
    const ctx = contextFor(optionsFor(['--request-metadata-url', `${server.url}/meta?sig=1`]));
    assert.deepEqual(await collector.collect(ctx), {
      kind: 'data',
      outputs: [
        ['request', document],
        ['d1', { k: 'v' }],
      ],
    });
    assert.deepEqual(
      server.requests.map((r) => `${r.method} ${r.url}`),
      ['HEAD /meta?sig=1', 'GET /meta?sig=1'],
    );
    assert.equal((await collector.collect(ctx)).kind, 'unchanged');
    assert.equal(server.requests.length, 3, 'no GET after an unchanged HEAD');
    lastModified = 'Wed, 25 Nov 2026 10:00:01 GMT';
    assert.equal((await collector.collect(ctx)).kind, 'data');
  } finally {
    await server.close();
  }
});

test('request: no URL is "not configured"; an error status or a non-object body is unavailable', async () => {
  const bodies = [
    [404, { error: 'nope' }],
    [200, [1, 2]],
  ] as const;
  let call = 0;
  const server = await fakeServer((request, response) => {
    const [status, body] = bodies[Math.min(call, bodies.length - 1)]!;
    if (request.method === 'GET') call++;
    sendJson(response, status, body);
  });
  try {
    const collector = createRequestCollector();
    assert.equal((await collector.collect(contextFor(optionsFor([])))).kind, 'not-configured');
    const ctx = contextFor(optionsFor(['--request-metadata-url', `${server.url}/m`]));
    assert.deepEqual(await collector.collect(ctx), { kind: 'unavailable', reason: 'GET answered 404' });
    assert.deepEqual(await collector.collect(ctx), { kind: 'unavailable', reason: 'the body is not a JSON object' });
  } finally {
    await server.close();
  }
  const closed = await collectAgainstClosedPort();
  assert.equal(closed.kind, 'unavailable');
});

async function collectAgainstClosedPort() {
  const server = await fakeServer((_request, response) => void response.end());
  const url = `${server.url}/m`;
  await server.close();
  return createRequestCollector().collect(contextFor(optionsFor(['--request-metadata-url', url])));
}

test('parseHttpDate reads RFC 1123 dates and refuses anything else', () => {
  assert.equal(parseHttpDate('Thu, 01 Jan 1970 00:00:10 GMT'), 10);
  assert.equal(parseHttpDate('2026-11-25T10:00:00Z'), undefined);
  assert.equal(parseHttpDate('Thu, 01 Foo 1970 00:00:10 GMT'), undefined);
});

test('request: a document replaced within the second it was served is fetched again, not taken as "unchanged"', async () => {
  // Swift keeps one Last-Modified for two updates in the same second: the first GET came between them.
  const modified = 'Wed, 25 Nov 2026 10:00:00 GMT';
  let version = 1;
  let date = modified;
  const server = await fakeServer((request, response) => {
    sendJson(response, 200, { version }, { 'last-modified': modified, date });
    if (request.method === 'GET' && version === 1) {
      version = 2;
      date = 'Wed, 25 Nov 2026 10:00:03 GMT';
    }
  });
  try {
    const collector = createRequestCollector();
    const ctx = contextFor(optionsFor(['--request-metadata-url', `${server.url}/meta`]));
    assert.deepEqual(await collector.collect(ctx), { kind: 'data', outputs: [['request', { version: 1 }]] });
    assert.deepEqual(await collector.collect(ctx), { kind: 'data', outputs: [['request', { version: 2 }]] }, 'the second version is read');
    assert.equal((await collector.collect(ctx)).kind, 'unchanged', 'served 3 s after its Last-Modified: now comparable');
    assert.deepEqual(
      server.requests.map((r) => r.method),
      ['HEAD', 'GET', 'HEAD', 'GET', 'HEAD'],
    );
  } finally {
    await server.close();
  }
});

test('comparableLastModified: only a Last-Modified at least one second before the Date', () => {
  const at = (lastModified: string, date?: string) => comparableLastModified({ 'last-modified': lastModified, ...(date ? { date } : {}) });
  assert.equal(at('Thu, 01 Jan 1970 00:00:10 GMT', 'Thu, 01 Jan 1970 00:00:11 GMT'), 10);
  assert.equal(at('Thu, 01 Jan 1970 00:00:10 GMT', 'Thu, 01 Jan 1970 00:00:10 GMT'), undefined);
  assert.equal(at('Thu, 01 Jan 1970 00:00:10 GMT'), undefined);
  assert.equal(at('yesterday', 'Thu, 01 Jan 1970 00:00:11 GMT'), undefined);
});

test('request: the body is decoded as python-requests decodes it (declared charset; latin-1 for text types; else UTF-8)', async () => {
  // Each expectation is what Debian's os-collect-config 12.0.0 (requests 2.28) reads from the same bytes.
  const cafe = '{"k": "caf\u00e9"}';
  const cases: [string, string | undefined, Buffer, unknown][] = [
    ['latin-1', 'application/json; charset=latin-1', Buffer.from(cafe, 'latin1'), 'café'],
    ['iso', 'application/json; CHARSET="ISO-8859-1"', Buffer.from('{"k": "\u00e9\u0080"}', 'latin1'), 'é\u0080'],
    ['cp1252', 'application/json; charset=windows-1252', Buffer.from('{"k": "\x80"}', 'latin1'), '€'],
    ['utf-16', 'application/json; charset=utf-16', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(cafe, 'utf16le')]), 'café'],
    [
      'utf-16be',
      'application/json; charset=utf-16',
      Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(cafe, 'utf16le').swap16()]),
      'café',
    ],
    ['ascii', 'application/json; charset=us-ascii', Buffer.from(cafe, 'latin1'), 'caf\ufffd'],
    ['bogus', 'application/json; charset=bogus-enc', Buffer.from(cafe), 'café'],
    ['text', 'text/plain', Buffer.from(cafe), 'cafÃ©'],
    ['octet', 'application/octet-stream', Buffer.from(cafe), 'café'],
    ['octet-bom', 'application/octet-stream', Buffer.from(`\ufeff${cafe}`), 'café'],
    ['none', undefined, Buffer.from(cafe), 'café'],
  ];
  const server = await fakeServer((request, response) => {
    const [, type, body] = cases.find(([name]) => request.url === `/${name}`) ?? ['', undefined, Buffer.alloc(0)];
    response.writeHead(200, type === undefined ? {} : { 'content-type': type });
    response.end(body);
  });
  try {
    for (const [name, , , expected] of cases) {
      const ctx = contextFor(optionsFor(['--request-metadata-url', `${server.url}/${name}`]));
      assert.deepEqual(await createRequestCollector().collect(ctx), { kind: 'data', outputs: [['request', { k: expected }]] }, name);
    }
  } finally {
    await server.close();
  }
});

test('request: a UTF-8 byte-order mark in an application/json body is refused, as json.loads refuses it', async () => {
  const server = await fakeServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(Buffer.from('\ufeff{"k": "v"}'));
  });
  try {
    const ctx = contextFor(optionsFor(['--request-metadata-url', `${server.url}/m`]));
    const outcome = await createRequestCollector().collect(ctx);
    assert.equal(outcome.kind, 'unavailable');
  } finally {
    await server.close();
  }
});

test('request: a big document (a Swift TempURL) that keeps arriving past [request] timeout is collected; one that stalls is not', async () => {
  const document = JSON.stringify({ deployments: [], filler: 'x'.repeat(128 * 1024) });
  const server = await fakeServer((request, response) => {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(document.length) });
    if (request.method === 'HEAD') return void response.end();
    // Twenty pieces 100 ms apart (about 2 s, past the 1 s timeout); for /stalls the last one never comes. (The server
    // runs in this process: 1 s against 100 ms pieces leaves 0.9 s for the process not to run on a loaded CI box.)
    let part = 0;
    const size = Math.ceil(document.length / 20);
    const timer = setInterval(() => {
      if (request.url === '/stalls' && part === 19) return void clearInterval(timer);
      response.write(document.slice(part * size, (part + 1) * size));
      if (++part === 20) {
        clearInterval(timer);
        response.end();
      }
    }, 100);
    response.on('close', () => clearInterval(timer));
  });
  try {
    const collect = (path: string) =>
      createRequestCollector().collect(
        contextFor(optionsFor(['--request-metadata-url', `${server.url}${path}`, '--request-timeout', '1'])),
      );
    const outcome = await collect('/meta');
    assert.equal(outcome.kind, 'data', JSON.stringify(outcome).slice(0, 300));
    const stalled = await collect('/stalls');
    assert.equal(stalled.kind, 'unavailable');
    assert.match((stalled as { reason: string }).reason, /the body stalled: no data for 1000 ms/);
  } finally {
    await server.close();
  }
});

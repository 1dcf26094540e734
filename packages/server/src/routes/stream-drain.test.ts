import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { endianness } from 'node:os';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { drained, kernelSendQueue, procNetAddress } from './stream-drain.ts';
import { dependantsOf } from '../../../../test/helpers/abort-signal.ts';

const linux = existsSync('/proc/net/tcp');

test('addresses are spelled as /proc/net/tcp spells them', { skip: endianness() !== 'LE' && 'the cases are little-endian' }, () => {
  assert.equal(procNetAddress('127.0.0.1', 8000), '0100007F:1F40');
  assert.equal(procNetAddress('10.1.2.3', 65535), '0302010A:FFFF');
  assert.equal(procNetAddress('::1', 80), '00000000000000000000000001000000:0050');
  assert.equal(procNetAddress('::ffff:127.0.0.1', 8000), '0000000000000000FFFF00000100007F:1F40');
  assert.equal(procNetAddress('fe80::1%eth0', 1), '000080FE000000000000000001000000:0001');
  assert.equal(procNetAddress('2001:db8:0:0:0:0:0:1', 443), 'B80D0120000000000000000001000000:01BB');
  for (const bad of ['', 'localhost', '1::2::3', '1:2:3', '::ffff:999.0.0.1', '12345::1', '1:2:3:4:5:6:7:8:9']) {
    assert.equal(procNetAddress(bad, 1), undefined, bad);
  }
});

/** A listener on `host` whose accepted socket is handed out, and a client connected to it that does not read. */
async function pair(host: string): Promise<{ server: Server; accepted: Socket; client: Socket }> {
  const server = createServer();
  server.listen(0, host);
  await once(server, 'listening');
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const client = connect({ host, port: (server.address() as AddressInfo).port });
  client.pause();
  const [socket] = await accepted;
  return { server, accepted: socket, client };
}

/** Writes to `socket` until Node holds what the kernel would not take. */
function fill(socket: Socket): void {
  const block = Buffer.alloc(64 * 1024, 'x');
  while (socket.write(block));
}

for (const host of ['127.0.0.1', '::1']) {
  test(
    `the kernel's unacknowledged bytes of a socket on ${host} fall as its peer reads`,
    { skip: !linux && 'no /proc/net/tcp here' },
    async (t) => {
      let sockets: Awaited<ReturnType<typeof pair>>;
      try {
        sockets = await pair(host);
      } catch (error) {
        return t.skip(`no ${host} here: ${(error as Error).message}`);
      }
      const { server, accepted, client } = sockets;
      try {
        fill(accepted);
        let before = 0;
        // The kernel's tables are read at most ten times a second.
        for (let i = 0; i < 20 && before === 0; i++, await sleep(110)) before = (await kernelSendQueue(accepted)) ?? 0;
        assert.ok(before > 0, 'a socket whose peer reads nothing holds bytes in the kernel');
        client.resume();
        let after = before;
        for (let i = 0; i < 50 && after >= before; i++, await sleep(110)) after = (await kernelSendQueue(accepted)) ?? before;
        assert.ok(after < before, `still ${after} of ${before} bytes after the peer read`);
      } finally {
        client.destroy();
        accepted.destroy();
        server.close();
      }
    },
  );
}

test('a socket the kernel does not list has no queue to tell', async () => {
  const { server, accepted, client } = await pair('127.0.0.1');
  client.destroy();
  accepted.destroy();
  server.close();
  await once(accepted, 'close');
  assert.equal(await kernelSendQueue(accepted), undefined);
});

test('a wait for a socket whose peer reads nothing ends stalled; one whose peer reads a little now and then ends drained', async () => {
  const { server, accepted, client } = await pair('127.0.0.1');
  const never = new AbortController();
  try {
    fill(accepted);
    const started = Date.now();
    assert.equal(await drained(accepted, accepted, never.signal, 400), 'stalled');
    assert.ok(Date.now() - started >= 400);

    // 64 KiB every 100 ms: the megabytes the socket buffers hold take far longer than the limit.
    let taken = 0;
    client.on('data', (chunk: Buffer) => {
      taken += chunk.length;
      if (taken >= 64 * 1024) client.pause();
    });
    const reader = setInterval(() => {
      taken = 0;
      client.resume();
    }, 100);
    try {
      for (let round = 0; round < 3; round++) {
        fill(accepted);
        assert.equal(await drained(accepted, accepted, never.signal, 1000), 'drained', `round ${round}`);
      }
    } finally {
      clearInterval(reader);
    }
  } finally {
    client.destroy();
    accepted.destroy();
    server.close();
  }
});

test('a wait ends aborted when its request goes, and at once when nothing is queued', async () => {
  const { server, accepted, client } = await pair('127.0.0.1');
  try {
    const gone = new AbortController();
    assert.equal(await drained(accepted, accepted, gone.signal, 1000), 'drained');
    fill(accepted);
    setTimeout(() => gone.abort(), 50);
    assert.equal(await drained(accepted, accepted, gone.signal, 60_000), 'aborted');
  } finally {
    client.destroy();
    accepted.destroy();
    server.close();
  }
});

test("a stream's many waits leave nothing on its abort signal, which lives as long as the stream", async () => {
  const { server, accepted, client } = await pair('127.0.0.1');
  const stream = new AbortController();
  try {
    client.resume();
    let waits = 0;
    for (let i = 0; i < 200; i++) {
      fill(accepted);
      if (accepted.writableNeedDrain) waits += 1;
      assert.equal(await drained(accepted, accepted, stream.signal, 10_000), 'drained');
    }
    assert.ok(waits >= 100, `only ${waits} of the writes had to wait`);
    assert.ok((dependantsOf(stream.signal) ?? 0) <= 1, `the stream's signal tracks ${dependantsOf(stream.signal)} others`);
    assert.equal(stream.signal.aborted, false);
  } finally {
    client.destroy();
    accepted.destroy();
    server.close();
  }
});

test('a wait for a peer that reads nothing ends stalled on time when the wall clock steps back an hour meanwhile', async () => {
  const { server, accepted, client } = await pair('127.0.0.1');
  const never = new AbortController();
  const wallNow = Date.now.bind(Date);
  try {
    fill(accepted);
    const wait = drained(accepted, accepted, never.signal, 400);
    await sleep(100);
    Date.now = () => wallNow() - 3_600_000;
    // Bounded: still waiting 3 s later is the defect (the stall measured on the wall clock).
    const outcome = await Promise.race([wait, sleep(3_000).then(() => 'still waiting')]);
    assert.equal(outcome, 'stalled');
  } finally {
    Date.now = wallNow;
    never.abort();
    client.destroy();
    accepted.destroy();
    server.close();
  }
});

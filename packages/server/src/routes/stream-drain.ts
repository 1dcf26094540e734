import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { isIPv4 } from 'node:net';
import { endianness } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Socket } from 'node:net';
import type { Writable } from 'node:stream';

/**
 * A socket's address as Linux's /proc/net/tcp{,6} spells it: the address's 32-bit words each in
 * the host's byte order, in hex, then the port in hex. Undefined for what is not an IP address.
 */
export function procNetAddress(address: string, port: number): string | undefined {
  let bytes: number[];
  if (isIPv4(address)) bytes = address.split('.').map(Number);
  else {
    const v6 = ipv6Bytes(address);
    if (!v6) return undefined;
    bytes = v6;
  }
  const words: string[] = [];
  for (let at = 0; at < bytes.length; at += 4) {
    const word = bytes.slice(at, at + 4);
    if (endianness() === 'LE') word.reverse();
    words.push(word.map((byte) => byte.toString(16).padStart(2, '0')).join(''));
  }
  return `${words.join('')}:${port.toString(16).padStart(4, '0')}`.toUpperCase();
}

/** The 16 bytes of an IPv6 address (with `::` and a dotted IPv4 tail), or undefined. */
function ipv6Bytes(address: string): number[] | undefined {
  let text = address.replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    if (!isIPv4(dotted[1]!)) return undefined;
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (half: string | undefined) => (half ? half.split(':') : []);
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...Array<string>(halves.length === 1 ? 0 : missing).fill('0'), ...tail];
  if (!all.every((group) => /^[0-9a-f]{1,4}$/i.test(group))) return undefined;
  return all.flatMap((group) => {
    const value = parseInt(group, 16);
    return [value >> 8, value & 0xff];
  });
}

/**
 * The kernel's TCP tables, read at most ten times a second however many streams ask. Ages here are on
 * the monotonic clock: on the wall clock, a step back (NTP) kept a stale table for as long as the step.
 */
let tables: { at: number; text: Promise<string> } | undefined;
function tcpTables(): Promise<string> {
  const now = performance.now();
  if (!tables || now - tables.at >= 100) {
    const read = (file: string) => readFile(file, 'latin1').catch(() => '');
    tables = { at: now, text: Promise.all([read('/proc/net/tcp'), read('/proc/net/tcp6')]).then((parts) => parts.join('\n')) };
  }
  return tables.text;
}

/**
 * The bytes the kernel holds for `socket` that its peer has not yet acknowledged (tx_queue in
 * /proc/net/tcp): it falls as the peer reads, however little, while what Node holds moves only
 * when the kernel has room for a whole write. Undefined where the kernel does not say (not Linux).
 */
export async function kernelSendQueue(socket: Socket): Promise<number | undefined> {
  const { localAddress, localPort, remoteAddress, remotePort } = socket;
  if (!localAddress || !localPort || !remoteAddress || !remotePort) return undefined;
  const local = procNetAddress(localAddress, localPort);
  const remote = procNetAddress(remoteAddress, remotePort);
  if (!local || !remote) return undefined;
  const text = await tcpTables();
  const at = text.indexOf(` ${local} ${remote} `);
  if (at < 0) return undefined;
  // "sl  local rem st tx_queue:rx_queue ...": the state, then the two queues in hex.
  const queues = /^ [0-9A-F]+ ([0-9A-F]+):/.exec(text.slice(at + local.length + remote.length + 2, at + local.length + remote.length + 40));
  return queues ? parseInt(queues[1]!, 16) : undefined;
}

/**
 * Waits for `out` (a stream writing to `socket`) to flush what it holds, at once if it holds little.
 * `stalled` when its client took none of it for `stallMs`; a client that reads slowly but reads is
 * never cut off. Node's own queue moves only when the kernel takes a whole write, which, with a
 * slow reader, waits for the socket buffers to half empty (megabytes on loopback): so the kernel's
 * unacknowledged bytes count as progress too, where Linux tells them.
 */
export async function drained(
  out: Writable,
  socket: Socket | null,
  abort: AbortSignal,
  stallMs: number,
): Promise<'drained' | 'aborted' | 'stalled'> {
  if (!out.writableNeedDrain) return abort.aborted ? 'aborted' : 'drained';
  const stalled = new AbortController();
  let queued = out.writableLength;
  let kernel: number | undefined;
  // Monotonic: on the wall clock, a step back kept a stalled client for as long as the step, and a step forward cut off one that reads.
  let lastProgress = performance.now();
  let checking = false;
  const watch = setInterval(
    () => {
      if (checking) return;
      checking = true;
      void (async () => {
        let progress = out.writableLength < queued;
        queued = Math.min(queued, out.writableLength);
        if (!progress && socket) {
          const now = await kernelSendQueue(socket);
          progress = now !== undefined && kernel !== undefined && now < kernel;
          kernel = now;
        }
        if (progress) lastProgress = performance.now();
        else if (performance.now() - lastProgress >= stallMs) stalled.abort();
      })().finally(() => (checking = false));
    },
    Math.max(10, stallMs / 4),
  );
  // Not AbortSignal.any: on Node 20 each call leaves an entry on `abort`, which lives as long as the stream.
  const onAbort = (): void => stalled.abort();
  if (abort.aborted) onAbort();
  else abort.addEventListener('abort', onAbort, { once: true });
  try {
    await once(out, 'drain', { signal: stalled.signal });
    return 'drained';
  } catch {
    return abort.aborted ? 'aborted' : 'stalled';
  } finally {
    clearInterval(watch);
    abort.removeEventListener('abort', onAbort);
  }
}

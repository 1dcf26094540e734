// Signal data -> a JSON body no larger than the server accepts. The end of a long output is what
// says why it failed, so each cut string keeps its tail, prefixed by a marker saying how much was
// cut. The original cut deploy_stdout/deploy_stderr in proportion to their size and crashed on
// Python 3; here every top-level string value (deploy_status_code aside) shares the room fairly:
// short values stay whole and the long ones split what is left.

/** The largest signal body Heat and hearth-server accept (Heat's max_json_body_size), in bytes. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** One value that was cut or dropped to fit. */
export interface BodyCut {
  field: string;
  /** UTF-8 bytes of the value that were removed. */
  cutBytes: number;
  /** True when the whole value (not a string) had to be dropped. */
  dropped: boolean;
}

/** The body to send and what was cut to make it fit. */
export interface FittedBody {
  body: string;
  bytes: number;
  cuts: BodyCut[];
}

/** The marker put in front of a cut value's kept tail. */
export function cutMarker(cutBytes: number): string {
  return `[heat-config-notify: the first ${cutBytes} bytes were cut to fit the signal size limit]\n`;
}

/** Room a marker can take in the JSON text, whatever the number. */
const MARKER_RESERVE = jsonStringBytes(cutMarker(10 ** 15));

/** Bytes one UTF-16 code unit takes inside a JSON string (a surrogate pair counts 2 + 2). */
function escapedBytes(code: number): number {
  if (code === 0x22 || code === 0x5c) return 2;
  if (code < 0x20) return code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d ? 2 : 6;
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  if (code >= 0xd800 && code <= 0xdfff) return 2;
  return 3;
}

/** Bytes of a string's JSON text, without its quotes. */
function jsonStringBytes(value: string): number {
  let bytes = 0;
  for (let i = 0; i < value.length; i += 1) bytes += escapedBytes(value.charCodeAt(i));
  return bytes;
}

/** The longest tail of `value` whose JSON text fits in `budget` bytes (never splitting a surrogate pair). */
function tailWithin(value: string, budget: number): string {
  let bytes = 0;
  let start = value.length;
  while (start > 0) {
    const code = value.charCodeAt(start - 1);
    const pair = code >= 0xdc00 && code <= 0xdfff && start > 1 && (value.charCodeAt(start - 2) & 0xfc00) === 0xd800;
    const width = pair ? 2 : 1;
    let need = 0;
    for (let k = 1; k <= width; k += 1) need += escapedBytes(value.charCodeAt(start - k));
    if (bytes + need > budget) break;
    bytes += need;
    start -= width;
  }
  return value.slice(start);
}

const byteLength = (text: string): number => Buffer.byteLength(text, 'utf8');

/** Room per value, fairest first: values under their share stay whole, the rest split what is left. */
function fairShares(sizes: number[], available: number): number[] {
  const order = sizes.map((size, index) => ({ size, index })).sort((a, b) => a.size - b.size);
  const shares = new Array<number>(sizes.length).fill(0);
  let left = Math.max(0, available);
  order.forEach(({ size, index }, rank) => {
    const share = Math.floor(left / (order.length - rank));
    shares[index] = Math.min(size, share);
    left -= shares[index];
  });
  return shares;
}

/**
 * Serialises signal data into a body of at most `maxBytes` UTF-8 bytes: unchanged when it fits;
 * else top-level strings keep their tails behind a marker, and non-string values too large for
 * any room are dropped, largest first (each listed in `cuts`).
 */
export function fitSignalBody(data: Readonly<Record<string, unknown>>, maxBytes = DEFAULT_MAX_BODY_BYTES): FittedBody {
  const whole = JSON.stringify(data);
  if (byteLength(whole) <= maxBytes) return { body: whole, bytes: byteLength(whole), cuts: [] };
  const cuts: BodyCut[] = [];
  const out: Record<string, unknown> = { ...data };
  const strings = Object.keys(out).filter((key) => key !== 'deploy_status_code' && typeof out[key] === 'string');
  const fixed = (): Record<string, unknown> => ({ ...out, ...Object.fromEntries(strings.map((key) => [key, ''])) });
  const reserve = strings.length * MARKER_RESERVE;
  for (;;) {
    if (byteLength(JSON.stringify(fixed())) + reserve <= maxBytes) break;
    const droppable = Object.keys(out)
      .filter((key) => key !== 'deploy_status_code' && !strings.includes(key))
      .map((key) => ({ key, size: byteLength(JSON.stringify(out[key]) ?? '') }))
      .sort((a, b) => b.size - a.size)[0];
    if (droppable === undefined) break;
    delete out[droppable.key];
    cuts.push({ field: droppable.key, cutBytes: droppable.size, dropped: true });
  }
  const available = maxBytes - byteLength(JSON.stringify(fixed())) - reserve;
  const sizes = strings.map((key) => jsonStringBytes(out[key] as string));
  const shares = fairShares(sizes, available);
  strings.forEach((key, index) => {
    if (sizes[index]! <= shares[index]!) return;
    const value = out[key] as string;
    const tail = tailWithin(value, shares[index]!);
    const cutBytes = byteLength(value.slice(0, value.length - tail.length));
    out[key] = cutMarker(cutBytes) + tail;
    cuts.push({ field: key, cutBytes, dropped: false });
  });
  const body = JSON.stringify(out);
  return { body, bytes: byteLength(body), cuts };
}

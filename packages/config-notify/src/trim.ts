// Signal data -> a JSON body no larger than the server accepts, whatever the hook produced: a body over
// the limit is refused (413) and the signal lost, so fitting is not best effort. The end of a long
// output is what says why it failed, so each cut string keeps its tail, prefixed by a marker saying
// how much was cut. The original cut deploy_stdout/deploy_stderr in proportion to their size and
// crashed on Python 3; here every top-level string value (deploy_status_code aside) shares the room
// fairly: short values stay whole and the long ones split what is left. When even the shortest form
// of every value cannot fit (thousands of outputs, huge non-string values), values are dropped,
// largest first, and the end of deploy_stderr names them. deploy_status_code is always kept.
// Sizes are computed once per value, so a signal with 100 000 keys is fitted in linear time.

/** The largest signal body Heat and hearth-server accept (Heat's max_json_body_size), in bytes. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** One value that was cut or dropped to fit. */
export interface BodyCut {
  field: string;
  /** Bytes of the value that were removed (UTF-8 of a cut string's head; JSON text of a dropped value). */
  cutBytes: number;
  /** True when the whole value had to be dropped. */
  dropped: boolean;
}

/** The body to send and what was cut to make it fit. */
export interface FittedBody {
  body: string;
  bytes: number;
  cuts: BodyCut[];
}

const STATUS_KEY = 'deploy_status_code';
const STDERR_KEY = 'deploy_stderr';
/** Dropped only after every other value: what a person reads first. */
const DROPPED_LAST = ['deploy_stdout', STDERR_KEY];

/** The unit of a cut count: bytes of UTF-8, or characters (UTF-16 code units, as a hook counts them). */
export type CutUnit = 'bytes' | 'characters';

/**
 * The marker put in front of a cut value's kept tail: `count` in all were cut, `earlier` of them before the value
 * reached heat-config-notify (by a hook or heat-config, whose own marker this one replaces).
 */
export function cutMarker(count: number, unit: CutUnit = 'bytes', earlier = 0): string {
  const before = earlier > 0 ? ` (${earlier} of them earlier)` : '';
  return `[heat-config-notify: the first ${count} ${unit} were cut to fit the signal size limit${before}]\n`;
}

/**
 * The markers a value may start with when its head was cut before it got here: a hook's own (hooks/_lib: the
 * tool's stdout/stderr in characters, an output file in bytes), heat-config's (a hook's stdout or stderr past
 * what it keeps, in bytes) and this one's.
 */
const EARLIER_MARKERS: ReadonlyArray<{ pattern: RegExp; unit: CutUnit }> = [
  { pattern: /^\[hook: the first (\d+) characters of the tool's (?:stdout|stderr) were cut\]\n/, unit: 'characters' },
  { pattern: /^\[hook: the first (\d+) bytes of output [^\n]* were cut\]\n/, unit: 'bytes' },
  { pattern: /^\[heat-config: the first (\d+) bytes of the hook's (?:stdout|stderr) were dropped; [^\n]*\]\n/, unit: 'bytes' },
  { pattern: /^\[heat-config-notify: the first (\d+) (bytes|characters) were cut to fit the signal size limit[^\n]*\]\n/, unit: 'bytes' },
];

/** The marker of an earlier cut at the start of `value`: its length, the count it gives and that count's unit. */
function earlierCut(value: string): { length: number; count: number; unit: CutUnit } | undefined {
  for (const { pattern, unit } of EARLIER_MARKERS) {
    const match = pattern.exec(value);
    if (match === null) continue;
    const count = Number(match[1]);
    if (!Number.isSafeInteger(count)) return undefined;
    return { length: match[0].length, count, unit: (match[2] as CutUnit | undefined) ?? unit };
  }
  return undefined;
}

/** Largest JSON text of the list of dropped names in the note (more are counted, not named). */
const NOTE_NAMES_BYTES = 512;

/** The line put at the end of deploy_stderr naming the values dropped: `names` (some of them) out of `total`. */
export function droppedNote(names: readonly string[], total: number): string {
  const more = total - names.length;
  const list = names.join(', ') + (more > 0 ? `${names.length > 0 ? ' and ' : ''}${more} more` : '');
  return `[heat-config-notify: ${total} value(s) dropped to fit the signal size limit: ${list}]\n`;
}

/** Bytes one UTF-16 code unit (not a surrogate) takes inside a JSON string. */
function escapedBytes(code: number): number {
  if (code === 0x22 || code === 0x5c) return 2;
  if (code < 0x20) return code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d ? 2 : 6;
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  return 3;
}

/** Code units and JSON bytes of the character ending at `end` (a surrogate pair is 4 bytes; a lone surrogate is escaped, 6). */
function charBefore(value: string, end: number): { units: number; bytes: number } {
  const code = value.charCodeAt(end - 1);
  if (code < 0xd800 || code > 0xdfff) return { units: 1, bytes: escapedBytes(code) };
  const pair = code >= 0xdc00 && end > 1 && (value.charCodeAt(end - 2) & 0xfc00) === 0xd800;
  return pair ? { units: 2, bytes: 4 } : { units: 1, bytes: 6 };
}

/** Bytes of a string's JSON text, without its quotes. */
function jsonStringBytes(value: string): number {
  let bytes = 0;
  for (let end = value.length; end > 0;) {
    const char = charBefore(value, end);
    bytes += char.bytes;
    end -= char.units;
  }
  return bytes;
}

/** Room a marker can take in the JSON text, whatever the numbers. */
const MARKER_RESERVE = jsonStringBytes(cutMarker(Number.MAX_SAFE_INTEGER, 'characters', Number.MAX_SAFE_INTEGER));
/** Room the note takes at the end of deploy_stderr: the text, a newline before it, the key and quotes. */
const NOTE_RESERVE = jsonStringBytes(droppedNote(['x'.repeat(NOTE_NAMES_BYTES)], 10 ** 9)) + 2 + `"${STDERR_KEY}":"",`.length;

/** The longest tail of `value` whose JSON text fits in `budget` bytes (never splitting a surrogate pair). */
function tailWithin(value: string, budget: number): string {
  let bytes = 0;
  let start = value.length;
  while (start > 0) {
    const char = charBefore(value, start);
    if (bytes + char.bytes > budget) break;
    bytes += char.bytes;
    start -= char.units;
  }
  return value.slice(start);
}

const byteLength = (text: string): number => Buffer.byteLength(text, 'utf8');

/** One top-level member of the signal and what it costs in the body. */
interface Member {
  key: string;
  value: unknown;
  /** `"key":` and a comma. */
  keyBytes: number;
  /** JSON text of a non-string value; inner bytes (no quotes) of a string. */
  valueBytes: number;
  isString: boolean;
}

function memberOf(key: string, value: unknown): Member {
  const keyBytes = byteLength(JSON.stringify(key)) + 2;
  if (typeof value === 'string') return { key, value, keyBytes, valueBytes: jsonStringBytes(value), isString: true };
  return { key, value, keyBytes, valueBytes: byteLength(JSON.stringify(value) ?? 'null'), isString: false };
}

/** The fewest bytes a member can take and stay: a string shrinks to its marker (or stays whole when shorter). */
function minimumBytes(member: Member): number {
  return member.keyBytes + (member.isString ? 2 + Math.min(member.valueBytes, MARKER_RESERVE) : member.valueBytes);
}

/**
 * Tail budget per string, fairest first: values under the equal share stay whole (Infinity); the rest
 * split what is left, each share paying for its marker. Needs `available` ≥ Σ min(size, MARKER_RESERVE).
 */
function tailBudgets(sizes: number[], available: number): number[] {
  const order = sizes.map((size, index) => ({ size, index })).sort((a, b) => a.size - b.size);
  const budgets = new Array<number>(sizes.length).fill(Infinity);
  let left = Math.max(0, available);
  order.forEach(({ size, index }, rank) => {
    const share = Math.floor(left / (order.length - rank));
    if (size <= share) {
      left -= size;
      return;
    }
    budgets[index] = Math.max(0, share - MARKER_RESERVE);
    left -= share;
  });
  return budgets;
}

/** The note naming what was dropped, its list of names kept under NOTE_NAMES_BYTES. */
function noteFor(dropped: readonly string[]): string {
  const shown: string[] = [];
  let bytes = 0;
  for (const name of dropped) {
    const nameBytes = jsonStringBytes(name) + 2;
    if (bytes + nameBytes > NOTE_NAMES_BYTES) break;
    shown.push(name);
    bytes += nameBytes;
  }
  return droppedNote(shown, dropped.length);
}

/** The members left once the largest are dropped until their shortest forms fit `budget`, and the names dropped. */
function dropUntilFits(members: Member[], fixedBytes: number, budget: number): { kept: Member[]; dropped: Member[] } {
  let total = fixedBytes + members.reduce((sum, member) => sum + minimumBytes(member), 0);
  const byCost = [...members].sort(
    (a, b) => Number(DROPPED_LAST.includes(a.key)) - Number(DROPPED_LAST.includes(b.key)) || minimumBytes(b) - minimumBytes(a),
  );
  const dropped = new Set<Member>();
  for (const member of byCost) {
    if (total <= budget) break;
    dropped.add(member);
    total -= minimumBytes(member);
  }
  return { kept: members.filter((member) => !dropped.has(member)), dropped: members.filter((member) => dropped.has(member)) };
}

/** The last resort when not even the status code and a note fit with the limit given: the status code alone, or nothing. */
function smallestBody(data: Readonly<Record<string, unknown>>, maxBytes: number): string {
  const withStatus = JSON.stringify(STATUS_KEY in data ? { [STATUS_KEY]: data[STATUS_KEY] } : {});
  return byteLength(withStatus) <= maxBytes ? withStatus : '{}';
}

/**
 * Serialises signal data into a body of at most `maxBytes` UTF-8 bytes: unchanged when it fits; else
 * top-level strings keep their tails behind a marker, and when that is not enough, values are dropped,
 * largest first (deploy_stdout and deploy_stderr last), named at the end of deploy_stderr. Every cut
 * or dropped value is listed in `cuts`. deploy_status_code is always kept.
 */
export function fitSignalBody(data: Readonly<Record<string, unknown>>, maxBytes = DEFAULT_MAX_BODY_BYTES): FittedBody {
  const whole = JSON.stringify(data);
  if (byteLength(whole) <= maxBytes) return { body: whole, bytes: byteLength(whole), cuts: [] };
  const members = Object.keys(data)
    .filter((key) => key !== STATUS_KEY && data[key] !== undefined)
    .map((key) => memberOf(key, data[key]));
  const status = STATUS_KEY in data ? memberOf(STATUS_KEY, data[STATUS_KEY]) : undefined;
  // `{}` and the status code, which is never cut.
  const fixedBytes = 2 + (status === undefined ? 0 : status.keyBytes + status.valueBytes);
  const fitsAsIs = fixedBytes + members.reduce((sum, member) => sum + minimumBytes(member), 0) <= maxBytes;
  const { kept, dropped } = fitsAsIs ? { kept: members, dropped: [] } : dropUntilFits(members, fixedBytes, maxBytes - NOTE_RESERVE);
  const note = dropped.length > 0 ? noteFor(dropped.map((member) => member.key)) : '';
  // A non-string deploy_stderr (null) gives way to the note.
  const stderr = kept.find((member) => member.key === STDERR_KEY);
  const noteOwnsStderr = note !== '' && stderr !== undefined && !stderr.isString;
  const strings = kept.filter((member) => member.isString);
  const fixedMembers = kept.reduce((sum, member) => sum + member.keyBytes + (member.isString ? 2 : member.valueBytes), 0);
  // The note, the escaped newline before it, and the key when deploy_stderr is not a kept string.
  const noteBytes = note === '' ? 0 : jsonStringBytes(note) + 2 + (stderr?.isString ? 0 : `"${STDERR_KEY}":"",`.length);
  const budgets = tailBudgets(
    strings.map((member) => member.valueBytes),
    maxBytes - fixedBytes - fixedMembers - noteBytes,
  );
  const cuts: BodyCut[] = dropped.map((member) => ({ field: member.key, cutBytes: member.valueBytes, dropped: true }));
  const keptKeys = new Set(kept.filter((member) => !(noteOwnsStderr && member === stderr)).map((member) => member.key));
  // The original order of the keys, less those dropped.
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(data)) if (key === STATUS_KEY || keptKeys.has(key)) out[key] = data[key];
  strings.forEach((member, index) => {
    const budget = budgets[index]!;
    if (member.valueBytes <= budget) return;
    const value = member.value as string;
    // An earlier marker would be cut away with the head, its count lost: one marker counts both cuts, in its unit.
    const earlier = earlierCut(value);
    const content = earlier === undefined ? value : value.slice(earlier.length);
    const tail = tailWithin(content, budget);
    const head = content.slice(0, content.length - tail.length);
    const marker =
      earlier === undefined
        ? cutMarker(byteLength(head))
        : cutMarker(earlier.count + (earlier.unit === 'bytes' ? byteLength(head) : head.length), earlier.unit, earlier.count);
    out[member.key] = marker + tail;
    cuts.push({ field: member.key, cutBytes: byteLength(value.slice(0, value.length - tail.length)), dropped: false });
  });
  if (note !== '') {
    const current = out[STDERR_KEY];
    const text = typeof current === 'string' ? current : '';
    out[STDERR_KEY] = text === '' || text.endsWith('\n') ? text + note : `${text}\n${note}`;
  }
  const body = JSON.stringify(out);
  if (byteLength(body) <= maxBytes) return { body, bytes: byteLength(body), cuts };
  const smallest = smallestBody(data, maxBytes);
  return {
    body: smallest,
    bytes: byteLength(smallest),
    cuts: members.map((m) => ({ field: m.key, cutBytes: m.valueBytes, dropped: true })),
  };
}

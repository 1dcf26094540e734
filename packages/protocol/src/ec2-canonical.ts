// The parts of an EC2 signature check that are plain text rules: SigV4's canonical forms (URI,
// query, header values, host) with their percent-encoding, and the two timestamp formats a
// signed request may carry. ec2-signature.ts puts them together.

/** The canonical URIs a SigV4 client may have signed: boto's quoted path, AWS's double-encoded one, and Keystone's raw path. */
export function canonicalUris(path: string): string[] {
  const once = percentEncode(path, '/');
  return [...new Set([once, percentEncode(once, '/'), path])];
}

export function canonicalHeaderValue(value: string): string {
  return value.trim().replace(/\s+/g, ' ');
}

/** The canonical query string: parameters sorted by name (code points), `pctenc(name)=pctenc(value)` joined by `&`. */
export function canonicalQuery(params: Record<string, string>): string {
  return Object.keys(params)
    .sort(compareCodePoints)
    .map((key) => `${percentEncode(key)}=${percentEncode(params[key] ?? '')}`)
    .join('&');
}

/** RFC 3986 percent-encoding of the UTF-8 bytes: only `A-Z a-z 0-9 - _ . ~` (and `keep`) stay as they are. */
export function percentEncode(text: string, keep = ''): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const char = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.~]/.test(char) || keep.includes(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function compareCodePoints(a: string, b: string): number {
  const left = [...a];
  const right = [...b];
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const diff = (left[i]?.codePointAt(0) ?? 0) - (right[i]?.codePointAt(0) ?? 0);
    if (diff !== 0) return diff;
  }
  return left.length - right.length;
}

/** The host as received, then without its port (IPv6 literals keep their brackets). */
export function hostCandidates(host: string): string[] {
  const bare = /^(\[[^\]]*\]|[^:]*):\d*$/.exec(host)?.[1];
  return bare === undefined || bare === host ? [host] : [host, bare];
}

/** Parses an ISO 8601 date-time (`2024-01-01T00:00:00Z`, fractions and offsets allowed, no zone = UTC) to epoch ms. */
export function parseIsoTimestamp(text: string): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$/i.exec(text);
  if (match === null) return null;
  const [, year, month, day, hour, minute, second, fraction = '', zone = 'Z'] = match;
  const base = utcMs(year, month, day, hour, minute, second);
  if (base === null) return null;
  const [offsetHours, offsetMinutes] = [Number(zone.slice(1, 3)), Number(zone.slice(-2))];
  if (zone.toUpperCase() !== 'Z' && (offsetHours > 23 || offsetMinutes > 59)) return null;
  const offset = zone.toUpperCase() === 'Z' ? 0 : (zone.startsWith('-') ? -1 : 1) * (offsetHours * 60 + offsetMinutes);
  return base + Math.floor(Number(`0${fraction}`) * 1000) - offset * 60_000;
}

/** Parses SigV4's `YYYYMMDDTHHMMSSZ` to epoch ms. */
export function parseAmzDate(text: string): number | null {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  return match === null ? null : utcMs(match[1], match[2], match[3], match[4], match[5], match[6]);
}

function utcMs(...fields: Array<string | undefined>): number | null {
  const [year, month, day, hour, minute, second] = fields.map(Number) as [number, number, number, number, number, number];
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  const date = new Date(ms);
  const valid = date.getUTCMonth() === month - 1 && date.getUTCDate() === day && hour < 24 && minute < 60 && second < 60;
  return valid ? ms : null;
}

// A response body decoded as python-requests' `Response.text` decodes it (the original's request
// collector parses that text): the Content-Type's charset; without one, ISO-8859-1 for any type
// containing `text` and UTF-8 for application/json; otherwise requests guesses (chardet), which is
// approximated by a byte-order mark, else UTF-8. Undecodable bytes become U+FFFD, as errors='replace'.
import type { IncomingHttpHeaders } from 'node:http';

/** Python's codec names of the charsets decoded by hand (WHATWG's labels differ: its `latin1` and `ascii` are windows-1252). */
const LATIN_1 = new Set([
  'latin_1',
  '8859',
  'cp819',
  'csisolatin1',
  'ibm819',
  'iso8859',
  'iso8859_1',
  'iso_8859_1',
  'iso_8859_1_1987',
  'iso_ir_100',
  'l1',
  'latin',
  'latin1',
]);
const ASCII = new Set(['ascii', '646', 'cp367', 'csascii', 'ibm367', 'iso646_us', 'iso_ir_6', 'us', 'us_ascii']);
const UTF_8 = new Set(['utf_8', 'u8', 'utf', 'utf8', 'cp65001']);
const UTF_16 = new Set(['utf_16', 'u16', 'utf16']);
const CP1252 = new Set(['cp1252', 'windows_1252', '1252']);

/** Python's cp1252 for bytes 0x80-0x9f (Node 20's TextDecoder reads windows-1252 as latin-1); above, latin-1. */
const CP1252_HIGH =
  '\u20ac\ufffd\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\ufffd\u017d\ufffd' +
  '\ufffd\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\ufffd\u017e\u0178';

/** The Content-Type's type and charset, as requests splits it (the type is not lower-cased; parameter names are). */
function contentType(headers: IncomingHttpHeaders): { type: string; charset: string | undefined } | undefined {
  const header = headers['content-type'];
  if (header === undefined || header === '') return undefined;
  const [type = '', ...params] = header.split(';');
  let charset: string | undefined;
  for (const param of params) {
    const equals = param.indexOf('=');
    const key = (equals === -1 ? param : param.slice(0, equals)).replace(/^["' ]+|["' ]+$/g, '').toLowerCase();
    if (key === 'charset' && equals !== -1) charset = param.slice(equals + 1).replace(/^["' ]+|["' ]+$/g, '');
  }
  return { type: type.trim(), charset };
}

/** Python's normalize_encoding, lower-cased: runs of punctuation become one `_`. */
function pythonCodecName(charset: string): string {
  return charset
    .toLowerCase()
    .split(/[^a-z0-9.]+/)
    .filter((part) => part !== '')
    .join('_');
}

function decodeWith(label: string, body: Buffer): string {
  // ignoreBOM keeps a byte-order mark as U+FEFF, as Python's utf-8 and utf-16-le/-be codecs do.
  return new TextDecoder(label, { ignoreBOM: true }).decode(body);
}

function decodeUtf16(body: Buffer): string {
  if (body[0] === 0xfe && body[1] === 0xff) return decodeWith('utf-16be', body.subarray(2));
  return decodeWith('utf-16le', body[0] === 0xff && body[1] === 0xfe ? body.subarray(2) : body);
}

function decodeCharset(charset: string, body: Buffer): string {
  const codec = pythonCodecName(charset);
  if (LATIN_1.has(codec)) return body.toString('latin1');
  if (ASCII.has(codec)) return body.toString('latin1').replace(/[\x80-\xff]/g, '\ufffd');
  if (CP1252.has(codec)) return body.toString('latin1').replace(/[\x80-\x9f]/g, (char) => CP1252_HIGH[char.charCodeAt(0) - 0x80] ?? char);
  if (UTF_8.has(codec)) return decodeWith('utf-8', body);
  if (codec === 'utf_8_sig') return new TextDecoder('utf-8').decode(body);
  if (UTF_16.has(codec)) return decodeUtf16(body);
  try {
    return decodeWith(charset.trim(), body);
  } catch {
    // An unknown charset: requests falls back to UTF-8.
    return decodeWith('utf-8', body);
  }
}

/** The body as text, decoded as python-requests would for these headers. */
export function responseText(headers: IncomingHttpHeaders, body: Buffer): string {
  const declared = contentType(headers);
  if (declared?.charset !== undefined) return decodeCharset(declared.charset, body);
  if (declared?.type.includes('text')) return body.toString('latin1');
  if (declared?.type.includes('application/json')) return decodeWith('utf-8', body);
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return decodeWith('utf-8', body.subarray(3));
  if ((body[0] === 0xff && body[1] === 0xfe) || (body[0] === 0xfe && body[1] === 0xff)) return decodeUtf16(body);
  return decodeWith('utf-8', body);
}

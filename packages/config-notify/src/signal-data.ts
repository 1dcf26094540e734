// stdin -> the signal data object. Whatever the bytes, this never throws: invalid UTF-8 becomes
// U+FFFD, lone UTF-16 surrogates (Python's surrogateescape, JSON-escaped) become U+FFFD, and
// input that is not a JSON object becomes `{}` with a warning, as the original does; but JSON cut short (its
// writer died mid-write) is reported as such, never taken for a whole signal.
import { MAX_SIGNAL_DEPTH } from '@hearth/agent-kit/signal-sendable';

/** The signal data and what was wrong with the input, for the log. */
export interface SignalData {
  data: Record<string, unknown>;
  warnings: string[];
  /**
   * The input ends inside its JSON object or array (a string or a bracket left open): the process writing it died
   * mid-write. `data` is then `{}`, which must not be signalled: the server takes `{}` for a success without outputs.
   */
  cutShort: boolean;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A string that is well-formed UTF-16, so that it encodes to valid UTF-8. */
export function wellFormed(value: string): string {
  return value.replace(LONE_SURROGATE, '\uFFFD');
}

/**
 * A copy of a JSON value whose strings (keys too) are all well-formed. A `__proto__` key stays an own key, as
 * JSON.parse made it (sendableSignal leaves it out, saying so). Past MAX_SIGNAL_DEPTH the value is kept as it
 * is: it is sent as JSON text, which escapes lone surrogates, and a copy thousands of levels deep would
 * overflow the stack.
 */
function wellFormedDeep(value: unknown, depth = 1): unknown {
  if (typeof value === 'string') return wellFormed(value);
  if (value === null || typeof value !== 'object' || depth > MAX_SIGNAL_DEPTH) return value;
  if (Array.isArray(value)) return value.map((item) => wellFormedDeep(item, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [wellFormed(key), wellFormedDeep(item, depth + 1)]));
}

/**
 * Whether `text` opens a JSON object or array that it never closes (outside strings), or ends inside a string:
 * what is left of a whole JSON text whose end was cut off. Bytes after the first value closes do not count.
 */
export function endsInsideJson(text: string): boolean {
  const start = text.search(/\S/);
  if (start === -1 || (text[start] !== '{' && text[start] !== '[')) return false;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i += 1) {
    const char = text[i];
    if (inString) {
      if (char === '\\') i += 1;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === '{' || char === '[') depth += 1;
    else if (char === '}' || char === ']') {
      depth -= 1;
      if (depth === 0) return false;
    }
  }
  return true;
}

/** Parses what a hook's dispatcher wrote on stdin into signal data. */
export function parseSignalData(input: Buffer): SignalData {
  const warnings: string[] = [];
  const none = (): SignalData => ({ data: {}, warnings, cutShort: false });
  const decoded = new TextDecoder('utf-8', { fatal: false }).decode(input);
  if (decoded.includes('\uFFFD') && !input.includes(Buffer.from('\uFFFD', 'utf8')))
    warnings.push('the signal data is not valid UTF-8: invalid bytes were replaced with U+FFFD');
  if (decoded.trim() === '') {
    warnings.push('no signal data on stdin: signalling {}');
    return none();
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoded);
  } catch (error) {
    if (endsInsideJson(decoded)) return { data: {}, warnings, cutShort: true };
    warnings.push(`the signal data on stdin is not JSON (${(error as Error).message}): signalling {}`);
    return none();
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    const kind = parsed === null ? 'null' : Array.isArray(parsed) ? 'array' : typeof parsed;
    warnings.push(`the signal data on stdin is a JSON ${kind}, not an object: signalling {}`);
    return none();
  }
  return { data: wellFormedDeep(parsed) as Record<string, unknown>, warnings, cutShort: false };
}

/** Reads all of stdin (or another stream) into one buffer; an interactive terminal counts as empty. */
export async function readAll(stream: NodeJS.ReadableStream & { isTTY?: boolean }): Promise<Buffer> {
  if (stream.isTTY) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
  return Buffer.concat(chunks);
}

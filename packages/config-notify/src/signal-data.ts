// stdin -> the signal data object. Whatever the bytes, this never throws: invalid UTF-8 becomes
// U+FFFD, lone UTF-16 surrogates (Python's surrogateescape, JSON-escaped) become U+FFFD, and
// input that is not a JSON object becomes `{}` with a warning, as the original does.
import { MAX_SIGNAL_DEPTH } from '@hearth/agent-kit/signal-sendable';

/** The signal data and what was wrong with the input, for the log. */
export interface SignalData {
  data: Record<string, unknown>;
  warnings: string[];
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

/** Parses what a hook's dispatcher wrote on stdin into signal data. */
export function parseSignalData(input: Buffer): SignalData {
  const warnings: string[] = [];
  const decoded = new TextDecoder('utf-8', { fatal: false }).decode(input);
  if (decoded.includes('\uFFFD') && !input.includes(Buffer.from('\uFFFD', 'utf8')))
    warnings.push('the signal data is not valid UTF-8: invalid bytes were replaced with U+FFFD');
  if (decoded.trim() === '') {
    warnings.push('no signal data on stdin: signalling {}');
    return { data: {}, warnings };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoded);
  } catch (error) {
    warnings.push(`the signal data on stdin is not JSON (${(error as Error).message}): signalling {}`);
    return { data: {}, warnings };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    const kind = parsed === null ? 'null' : Array.isArray(parsed) ? 'array' : typeof parsed;
    warnings.push(`the signal data on stdin is a JSON ${kind}, not an object: signalling {}`);
    return { data: {}, warnings };
  }
  return { data: wellFormedDeep(parsed) as Record<string, unknown>, warnings };
}

/** Reads all of stdin (or another stream) into one buffer; an interactive terminal counts as empty. */
export async function readAll(stream: NodeJS.ReadableStream & { isTTY?: boolean }): Promise<Buffer> {
  if (stream.isTTY) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
  return Buffer.concat(chunks);
}

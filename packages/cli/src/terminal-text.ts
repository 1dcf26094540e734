import stringWidth from 'string-width';

// What a terminal would act on rather than show: C0/C1 controls and DEL (ESC starts an escape
// sequence, CR and BS overwrite what is shown), line/paragraph separators, and the bidi controls
// (they reorder the text that follows, so a name could pose as another and columns shift).
const UNSAFE = /[\p{Cc}\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/gu;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** One character as a visible escape: `\n`, `\x1b`, `\u202e`. */
function escapeChar(char: string): string {
  const named = NAMED[char];
  if (named !== undefined) return named;
  const code = char.codePointAt(0) ?? 0;
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * Text safe to write to a terminal: every control character (and bidi control) shown as an escape
 * such as `\x1b`, so text from hearth-server or a VM never drives the terminal. The characters in
 * `keep` (e.g. '\n\t' for a multi-line value) pass through. Default: none kept.
 */
export function escapeControls(text: string, keep = ''): string {
  return text.replace(UNSAFE, (char) => (keep.includes(char) ? char : escapeChar(char)));
}

/** The columns `text` takes on a terminal: wide (CJK, emoji) count 2, combining and zero-width marks 0. */
export function displayWidth(text: string): number {
  return stringWidth(text);
}

/** `text` padded with spaces to `width` terminal columns. */
export function padDisplay(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - displayWidth(text)));
}

/**
 * `text` cut to at most `columns` terminal columns, ending in '…' when cut; never inside a
 * character (grapheme), so a wide character or emoji is dropped whole.
 */
export function fitColumns(text: string, columns: number): string {
  if (displayWidth(text) <= columns) return text;
  let fitted = '';
  let width = 0;
  for (const { segment } of new Intl.Segmenter().segment(text)) {
    const segmentWidth = displayWidth(segment);
    if (width + segmentWidth > columns - 1) break;
    fitted += segment;
    width += segmentWidth;
  }
  return `${fitted}…`;
}

/**
 * Parses the Python literals heat-agents' docker-compose hook accepted for its `env_files` input through
 * ast.literal_eval: strings ('...' or "..." with backslash escapes), numbers, True/False/None, lists, tuples
 * and dicts. Throws SyntaxError with the offset of anything else.
 */
export function parsePythonLiteral(text: string): unknown {
  let at = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at offset ${at} of ${JSON.stringify(text.length > 60 ? text.slice(0, 57) + '...' : text)}`);
  };
  const skip = (): void => {
    while (at < text.length && /\s/.test(text[at]!)) at++;
  };
  const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', '0': '\0' };
  const string = (): string => {
    const quote = text[at++]!;
    let out = '';
    while (at < text.length && text[at] !== quote) {
      if (text[at] === '\\') {
        const next = text[at + 1] ?? fail('unfinished escape');
        out += ESCAPES[next] ?? `\\${next}`;
        at += 2;
      } else out += text[at++];
    }
    if (text[at] !== quote) fail('unterminated string');
    at++;
    return out;
  };
  const sequence = (close: string): unknown[] => {
    at++;
    const items: unknown[] = [];
    for (skip(); text[at] !== close; skip()) {
      items.push(value());
      skip();
      if (text[at] === ',') at++;
      else if (text[at] !== close) fail(`expected , or ${close}`);
    }
    at++;
    return items;
  };
  const dict = (): Record<string, unknown> => {
    at++;
    const out: Record<string, unknown> = {};
    for (skip(); text[at] !== '}'; skip()) {
      const key = value();
      skip();
      if (text[at++] !== ':') fail('expected :');
      out[String(key)] = value();
      skip();
      if (text[at] === ',') at++;
      else if (text[at] !== '}') fail('expected , or }');
    }
    at++;
    return out;
  };
  const value = (): unknown => {
    skip();
    const char = text[at];
    if (char === "'" || char === '"') return string();
    if (char === '[') return sequence(']');
    if (char === '(') return sequence(')');
    if (char === '{') return dict();
    const word = /^(?:True|False|None|[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)/.exec(text.slice(at))?.[0];
    if (word === undefined) return fail('unexpected character');
    at += word.length;
    return word === 'True' ? true : word === 'False' ? false : word === 'None' ? null : Number(word);
  };
  const result = value();
  skip();
  if (at < text.length) fail('unexpected text after the value');
  return result;
}

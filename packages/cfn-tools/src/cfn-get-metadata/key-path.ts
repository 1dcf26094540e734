// cfn-get-metadata's `-k/--key`: a dotted path into the metadata, a segment holding dots quoted as `'a.b'`.

/** The value at `key` in `metadata` (as the original's display()), or undefined when the path does not lead anywhere. */
export function valueAtKey(metadata: unknown, key: string): unknown {
  let rest = key;
  let value: unknown = metadata;
  while (rest !== '') {
    const match = /^(?:'([^']+)'|([^.]+))(?:\.|$)/.exec(rest);
    if (!match) return undefined;
    const segment = match[1] ?? match[2]!;
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
    rest = rest.slice(match[0].length);
  }
  return value;
}

// A signal's body is serialised twice on its way into the store: whole, for its idempotency digest,
// and in part, as the deployment's `output_values` (deploy_stdout and the outputs it carries). On
// Node 20, JSON.stringify of a kilobyte of text costs ~5 µs, and the writer thread, which commits
// every signal, is what bounds their rate. So the writer serialises each top-level value once and
// puts both texts together from those parts: the same bytes JSON.stringify gives (a digest stored
// by an earlier release still matches). Serialising on the event loop instead, before the write is
// queued, was slower end to end (test/bench/README.md, 2026-11-29).

/** A signal body's top-level values as JSON text, by key, in the body's key order. */
export type SerialisedValues = ReadonlyMap<string, string>;

/** Each top-level value of `body` as JSON (a key whose value JSON leaves out is left out). */
export function serialiseValues(body: Readonly<Record<string, unknown>>): SerialisedValues {
  const values = new Map<string, string>();
  for (const key of Object.keys(body)) {
    const json: string | undefined = JSON.stringify(body[key]);
    if (json !== undefined) values.set(key, json);
  }
  return values;
}

/**
 * What JSON.stringify(object) gives, reusing the body's serialised value for each key whose value is
 * the body's own (the same string, number or object); other values (kept from earlier signals) are
 * serialised here. `stringifyReusing(body, body, values)` is the body's own text.
 */
export function stringifyReusing(
  object: Readonly<Record<string, unknown>>,
  body: Readonly<Record<string, unknown>>,
  values: SerialisedValues,
): string {
  let json = '';
  for (const key of Object.keys(object)) {
    const value = object[key];
    const known = Object.hasOwn(body, key) && body[key] === value ? values.get(key) : undefined;
    const text: string | undefined = known ?? JSON.stringify(value);
    if (text !== undefined) json += `${json === '' ? '{' : ','}${JSON.stringify(key)}:${text}`;
  }
  return json === '' ? '{}' : `${json}}`;
}

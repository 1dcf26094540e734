// The wait-condition signal body, serialized as the original's json.dumps does it (", " and ": "
// separators, non-ASCII as \uXXXX), so that both send byte-identical bodies.

/** The body cfn-signal PUTs. */
export interface WaitConditionSignal {
  Status: 'SUCCESS' | 'FAILURE';
  Reason: string;
  UniqueId: string;
  Data: string;
}

/** A string as Python's json.dumps writes it with ensure_ascii (the default). */
export function pythonJsonString(text: string): string {
  return JSON.stringify(text).replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** `{"Status": ..., "Reason": ..., "UniqueId": ..., "Data": ...}` in that order. */
export function signalBody(signal: WaitConditionSignal): string {
  const fields = (['Status', 'Reason', 'UniqueId', 'Data'] as const).map(
    (key) => `${pythonJsonString(key)}: ${pythonJsonString(signal[key])}`,
  );
  return `{${fields.join(', ')}}`;
}

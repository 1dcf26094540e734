// The wait-condition signal body, serialized as the original's json.dumps does it (", " and ": "
// separators, non-ASCII as \uXXXX), so that both send byte-identical bodies.
import { pythonJsonString } from '../shared/python-json.ts';

/** The body cfn-signal PUTs. */
export interface WaitConditionSignal {
  Status: 'SUCCESS' | 'FAILURE';
  Reason: string;
  UniqueId: string;
  Data: string;
}

/** `{"Status": ..., "Reason": ..., "UniqueId": ..., "Data": ...}` in that order. */
export function signalBody(signal: WaitConditionSignal): string {
  const fields = (['Status', 'Reason', 'UniqueId', 'Data'] as const).map(
    (key) => `${pythonJsonString(key)}: ${pythonJsonString(signal[key])}`,
  );
  return `{${fields.join(', ')}}`;
}

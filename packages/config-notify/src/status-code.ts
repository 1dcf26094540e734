// deploy_status_code as every server takes it. hearth-server's signal schema accepts an integer, null or a
// string of at most 64 characters, and refuses anything else with a 400: the signal would be lost for good and
// the deployment left to time out. Heat only asks whether str(code) != '0', so any other value is a failure
// either way: it is sent as text, cut to its first 64 characters, and its whole text goes to the end of
// deploy_stderr, where a person reads why the deployment failed.

/** Longest string deploy_status_code hearth-server accepts. */
export const MAX_STATUS_CODE_CHARS = 64;

/** The signal data with a deploy_status_code every server accepts (`changed` when it had to be rewritten). */
export function acceptedStatusCode(data: Readonly<Record<string, unknown>>): { data: Readonly<Record<string, unknown>>; changed: boolean } {
  const code = data.deploy_status_code;
  if (code === undefined || code === null || Number.isSafeInteger(code)) return { data, changed: false };
  if (typeof code === 'string' && code.length <= MAX_STATUS_CODE_CHARS) return { data, changed: false };
  // A number as written, not as JSON: JSON.stringify writes 1e400 (Infinity) as null.
  const text = typeof code === 'string' || typeof code === 'number' ? String(code) : (JSON.stringify(code) ?? typeof code);
  // At most 64 UTF-16 units (so 64 characters however they are counted), never half a surrogate pair.
  const short = text.slice(0, MAX_STATUS_CODE_CHARS).replace(/[\uD800-\uDBFF]$/, '');
  const stderr = typeof data.deploy_stderr === 'string' ? data.deploy_stderr : '';
  const note = `[heat-config-notify: deploy_status_code was ${text}]\n`;
  return {
    data: {
      ...data,
      deploy_status_code: short,
      deploy_stderr: stderr === '' || stderr.endsWith('\n') ? stderr + note : `${stderr}\n${note}`,
    },
    changed: true,
  };
}

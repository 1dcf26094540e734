// Downloads for `sources` and files' `source`: http(s) through agent-kit's client (redirects
// followed, as curl -L would; GitHub tarball URLs redirect), file:// from disk. No shell, no curl.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { redactUrl } from '@hearth/agent-kit/redact';

/** Redirects followed before giving up. */
const MAX_REDIRECTS = 5;

/** Fetches `url` into memory; throws with the URL (secret query values hidden) and the HTTP status (or network error) when it cannot. */
export async function fetchUrl(url: string): Promise<Buffer> {
  let current = url;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const parsed = new URL(current);
    if (parsed.protocol === 'file:') return readFile(fileURLToPath(parsed));
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new Error(`unsupported URL scheme ${parsed.protocol} in ${redactUrl(url)}`);
    const { httpRequest } = await import('@hearth/agent-kit/http');
    const response = await httpRequest({ url: current, retries: 2, timeoutMs: 300_000, maxBodyBytes: 2 * 1024 ** 3 });
    const location = response.headers.location;
    if (response.status >= 300 && response.status < 400 && location !== undefined) {
      current = new URL(location, current).toString();
      continue;
    }
    if (response.status !== 200) throw new Error(`GET ${redactUrl(current)} answered HTTP ${response.status}`);
    return response.body;
  }
  throw new Error(`GET ${redactUrl(url)}: more than ${MAX_REDIRECTS} redirects`);
}

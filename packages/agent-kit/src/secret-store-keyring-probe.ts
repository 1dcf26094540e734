// The keyring backend's first contact with the Secret Service, made in a child process. libsecret blocks a
// libuv worker thread for as long as the D-Bus peer does not answer (a bus socket nobody serves, a Secret
// Service stuck on an unlock prompt): such a call can neither be cancelled nor outlived, since even
// process.exit() then waits for it forever, and every retry ties up one more of the four worker threads
// that all file I/O shares. A child can be killed; so the agent loads keytar itself only after a child
// has proved the Secret Service answers.
import { spawn } from 'node:child_process';

/** Items whose account starts with this are the probe's own, never listed and never settable. */
export const PROBE_PREFIX = '.hearth-probe.';

/**
 * What the child runs (CommonJS, through `node -e`): store, read back and remove a random item with keytar.
 * argv: the keytar module's resolved path, the service. Nothing secret is on its command line: the item's
 * value is made up in the child.
 */
const PROBE_SCRIPT = `
const { randomBytes } = require('node:crypto');
const keytar = require(process.argv[1]);
const service = process.argv[2];
(async () => {
  const account = ${JSON.stringify(PROBE_PREFIX)} + randomBytes(6).toString('hex');
  const token = randomBytes(16).toString('hex');
  await keytar.setPassword(service, account, token);
  const readBack = await keytar.getPassword(service, account);
  await keytar.deletePassword(service, account);
  if (readBack !== token) throw new Error('an item just stored could not be read back');
})().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(String((error && error.message) || error));
    process.exit(1);
  },
);
`;

/** The message of a probe that got no answer. */
export function noAnswerMessage(ms: number): string {
  return `the Secret Service got no answer within ${ms} ms (a D-Bus bus that does not answer, or a locked keyring waiting for an unlock prompt?)`;
}

/**
 * Runs the store/read/remove probe with the keytar module at `keytarPath` in a child node process that is
 * killed (SIGKILL) after `timeoutMs`. Resolves when the Secret Service worked; rejects with why it did not.
 */
export function probeInChild(keytarPath: string, service: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', PROBE_SCRIPT, keytarPath, service], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    let timedOut = false;
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < 4096) stderr += chunk;
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`could not start the probe process: ${error.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) reject(new Error(noAnswerMessage(timeoutMs)));
      else if (code === 0) resolve();
      else reject(new Error(stderr.trim() || `the probe process ended with ${signal ?? `exit code ${String(code)}`}`));
    });
  });
}

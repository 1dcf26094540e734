import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildConfigCreate } from './config-definition.ts';
import { ExitError } from './errors.ts';
import { MAX_CONFIG_REQUEST_BYTES, MAX_CONFIG_TEXT_LENGTH } from './protocol-values.ts';

/** Builds a `config create` body whose --config-file `run.sh` holds `text`. */
function build(text: string): Promise<unknown> {
  return buildConfigCreate('big', { group: 'script', configFile: 'run.sh' }, (path) =>
    path === 'run.sh' ? Promise.resolve(text) : Promise.reject(new Error(path)),
  );
}

/** Asserts `promise` rejects with a usage error (64) whose message matches `pattern`. */
async function assertUsage(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ExitError);
    assert.equal(error.exitCode, 64);
    assert.match(error.message, pattern);
    assert.ok(error.hint !== undefined);
    return true;
  });
}

test('a config body over 4 MiB characters is refused before upload, naming the file and the limit', async () => {
  await assertUsage(build('a'.repeat(MAX_CONFIG_TEXT_LENGTH + 1)), /^--config-file run\.sh has 4194305 characters: .* at most 4194304/);
  const fits = (await build('a'.repeat(MAX_CONFIG_TEXT_LENGTH))) as { config: string };
  assert.equal(fits.config.length, MAX_CONFIG_TEXT_LENGTH);
  // hearth-server counts code points: these 2 Mi emoji are 4 Mi + 2 UTF-16 units, within the character
  // limit, and are refused only for the size of the request.
  await assertUsage(build('😀'.repeat(MAX_CONFIG_TEXT_LENGTH / 2 + 1)), /^--config-file run\.sh makes a request of 8\.0 MiB/);
});

test('a config within the character limit whose request exceeds the server body limit is refused too', async () => {
  // 2 Mi CJK characters are 6 MiB of UTF-8; 3 Mi newlines become 6 MiB of `\n` escapes in JSON.
  await assertUsage(build('日'.repeat(2 * 1024 * 1024)), /^--config-file run\.sh makes a request of 6\.0 MiB .* at most 5\.0 MiB/);
  await assertUsage(build('\n'.repeat(3 * 1024 * 1024)), /makes a request of 6\.0 MiB/);
  // 2.5 Mi two-byte characters, less a little for the JSON envelope, just fit.
  const fits = (await build('é'.repeat((MAX_CONFIG_REQUEST_BYTES - 512) / 2))) as { config: string };
  assert.equal(fits.config.length, (MAX_CONFIG_REQUEST_BYTES - 512) / 2);
});

test('the --config text gets the same check', async () => {
  const tooBig = buildConfigCreate('big', { group: 'script', config: 'a'.repeat(MAX_CONFIG_TEXT_LENGTH + 1) }, () =>
    Promise.reject(new Error('no files')),
  );
  await assertUsage(tooBig, /^the --config text has 4194305 characters/);
});

test('an empty --group is refused: no hook on the VM would run the config', async () => {
  for (const group of ['', '  ']) {
    await assertUsage(
      buildConfigCreate('x', { group, config: 'echo hi' }, () => Promise.reject(new Error('no files'))),
      /^--group "\s*" is empty$/,
    );
  }
});

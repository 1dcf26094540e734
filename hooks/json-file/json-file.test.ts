import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
  chmodSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { runHookExecutable, sampleDeployment } from '../_lib/testing.ts';

const HOOK = new URL('./json-file', import.meta.url).pathname;

test('writes each file as Python json.dumps(indent=4, sort_keys=True) would, creating parents 0700', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hook-json-'));
  const nested = join(dir, 'a', 'b', 'conf.json');
  const flat = join(dir, 'flat.json');
  const run = await runHookExecutable(
    HOOK,
    sampleDeployment({ group: 'json-file', config: { [nested]: { z: 1, a: { d: [true, null, 'é'], c: {} } }, [flat]: [] } }),
  );
  assert.equal(run.exitCode, 0, run.stderr);
  assert.deepEqual(run.result, { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 });
  assert.equal(
    readFileSync(nested, 'utf8'),
    '{\n    "a": {\n        "c": {},\n        "d": [\n            true,\n            null,\n            "\\u00e9"\n        ]\n    },\n    "z": 1\n}',
  );
  assert.equal(readFileSync(flat, 'utf8'), '[]');
  assert.equal(statSync(join(dir, 'a')).mode & 0o777, 0o700);
  assert.equal(statSync(join(dir, 'a', 'b')).mode & 0o777, 0o700);
});

test('an existing file is replaced whole and keeps its mode; config may be JSON text', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hook-json-'));
  const path = join(dir, 'x.json');
  writeFileSync(path, 'x'.repeat(100));
  chmodSync(path, 0o640);
  const run = await runHookExecutable(HOOK, sampleDeployment({ config: JSON.stringify({ [path]: { k: 'v' } }) }));
  assert.equal(run.result?.deploy_status_code, 0);
  assert.equal(readFileSync(path, 'utf8'), '{\n    "k": "v"\n}');
  assert.equal(statSync(path).mode & 0o777, 0o640);
});

test('a write cut short (the file size limit here, a full disk, the hook killed) leaves the old file whole, never a cut one', async () => {
  // The original truncated the file and wrote into it: the EFBIG left 1 MiB of cut JSON where a whole file was.
  const dir = mkdtempSync(join(tmpdir(), 'hook-json-'));
  const path = join(dir, 'app.json');
  writeFileSync(path, '{"old": true}');
  chmodSync(path, 0o640);
  const limited = join(dir, 'json-file-limited');
  writeFileSync(limited, `#!/bin/bash\nulimit -f 1024\nexec ${JSON.stringify(HOOK)}\n`, { mode: 0o755 });
  const cut = await runHookExecutable(limited, sampleDeployment({ config: { [path]: { big: 'x'.repeat(2_000_000) } } }));
  assert.equal(cut.result?.deploy_status_code, 1, cut.stderr);
  assert.match(String(cut.result?.deploy_stderr), /app\.json: EFBIG/);
  assert.equal(readFileSync(path, 'utf8'), '{"old": true}');
  assert.deepEqual(readdirSync(dir).sort(), ['app.json', 'json-file-limited'], 'no temp file left');
  // A temp file of a writer that died (killed mid-write) is removed by the next write there; the target is replaced.
  const dead = spawnSync('true').pid;
  const stale = join(dir, `.app.json.${dead}.0123456789ab.tmp`);
  writeFileSync(stale, '{"big": "xx');
  const whole = await runHookExecutable(HOOK, sampleDeployment({ config: { [path]: { k: 'v' } } }));
  assert.equal(whole.result?.deploy_status_code, 0, whole.stderr);
  assert.equal(readFileSync(path, 'utf8'), '{\n    "k": "v"\n}');
  assert.equal(statSync(path).mode & 0o777, 0o640);
  assert.equal(existsSync(stale), false);
});

test(
  'an existing file keeps its owner; a symlink keeps pointing at the file, which is replaced',
  { skip: process.getuid?.() !== 0 && 'needs root' },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hook-json-'));
    const path = join(dir, 'owned.json');
    writeFileSync(path, '1');
    chownSync(path, 4321, 4322);
    chmodSync(path, 0o2640);
    const link = join(dir, 'link.json');
    const linked = join(dir, 'linked.json');
    writeFileSync(linked, '1');
    symlinkSync(linked, link);
    const run = await runHookExecutable(HOOK, sampleDeployment({ config: { [path]: 2, [link]: 3 } }));
    assert.equal(run.result?.deploy_status_code, 0, run.stderr);
    assert.equal(readFileSync(path, 'utf8'), '2');
    assert.deepEqual([statSync(path).uid, statSync(path).gid, statSync(path).mode & 0o7777], [4321, 4322, 0o2640]);
    assert.equal(lstatSync(link).isSymbolicLink(), true);
    assert.equal(readFileSync(linked, 'utf8'), '3');
  },
);

test('relative paths and unwritable files fail the deployment, naming them, while the other files are written', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hook-json-'));
  const blocker = join(dir, 'blocker');
  writeFileSync(blocker, '');
  const good = join(dir, 'good.json');
  const cwd = mkdtempSync(join(tmpdir(), 'hook-json-cwd-'));
  const run = await runHookExecutable(HOOK, sampleDeployment({ config: { 'relative.json': 1, [join(blocker, 'x.json')]: 2, [good]: 3 } }), {
    cwd,
  });
  assert.equal(run.exitCode, 0);
  assert.equal(run.result?.deploy_status_code, 1);
  assert.match(String(run.result?.deploy_stderr), /"relative.json" is not an absolute path/);
  assert.match(String(run.result?.deploy_stderr), /blocker\/x.json: (ENOTDIR|EEXIST)/);
  assert.equal(readFileSync(good, 'utf8'), '3');
  assert.equal(existsSync(join(cwd, 'relative.json')), false);
});

test('an empty config writes nothing and succeeds; a config that is not a map fails with the value', async () => {
  const empty = await runHookExecutable(HOOK, sampleDeployment({ config: null }));
  assert.deepEqual(empty.result, { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 });
  for (const config of ['not json', [1, 2], 5]) {
    const run = await runHookExecutable(HOOK, sampleDeployment({ config }));
    assert.equal(run.result?.deploy_status_code, 1, JSON.stringify(config));
    assert.match(String(run.result?.deploy_stderr), /config must map absolute file paths to data/);
  }
});

// Numbers whose form JSON.parse loses: floats with an integer value, an integer beyond 2^53, -0.0, a small float.
const NUMBERS = '{"i": 1.0, "e": 1e16, "big": 12345678901234567890, "neg": -0.0, "small": 1e-05, "l": [2.50, 0, 1E+2]}';

/** What python3's json.dumps(json.loads(text), indent=4, sort_keys=True) writes, as the original hook writes each file. */
function pythonDumps(text: string): string {
  const script = 'import json, sys; sys.stdout.write(json.dumps(json.load(sys.stdin), indent=4, sort_keys=True))';
  return execFileSync('python3', ['-c', script], { input: text, encoding: 'utf8' });
}

test('floats keep their form and big integers their digits, byte for byte as Python writes them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hook-json-'));
  const path = join(dir, 'n.json');
  const text = join(dir, 'text.json');
  // Raw text on stdin: JSON.stringify of a JS object could not hold 1.0 or 2^64.
  const stdin = `{"id": "d1", "group": "json-file", "config": {${JSON.stringify(path)}: ${NUMBERS}}}`;
  const run = await runHookExecutable(HOOK, stdin);
  assert.equal(run.result?.deploy_status_code, 0, run.stderr);
  const expected = pythonDumps(NUMBERS);
  assert.match(expected, /"i": 1\.0,/);
  assert.equal(readFileSync(path, 'utf8'), expected);
  // The same data in a config given as JSON text.
  const asText = await runHookExecutable(HOOK, sampleDeployment({ config: `{${JSON.stringify(text)}: ${NUMBERS}}` }));
  assert.equal(asText.result?.deploy_status_code, 0, asText.stderr);
  assert.equal(readFileSync(text, 'utf8'), expected);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StepError } from '../context.ts';
import { fakeContext, recordingRunner } from '../testing.ts';
import { applyFiles, parseMode } from './files.ts';

function tempRoot(t: { after: (fn: () => void) => void }): string {
  const root = mkdtempSync(join(tmpdir(), 'cfn-init-files-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

test('string, JSON, base64 and mustache content; modes; parent dirs made; changes recorded', async (t) => {
  const root = tempRoot(t);
  const { context } = fakeContext(recordingRunner());
  await applyFiles(context, {
    [`${root}/a/b/plain.txt`]: { content: 'hello\n', mode: '000600' },
    [`${root}/data.json`]: { content: { name: 'web', ports: [80, 443], tls: { on: true } } },
    [`${root}/bin.dat`]: { content: Buffer.from([0, 1, 2, 255]).toString('base64'), encoding: 'base64', mode: '000755' },
    [`${root}/tpl.conf`]: {
      content: 'server {{host}}:{{port}}\n{{#extra}}{{.}};{{/extra}}',
      context: { host: 'db<1>', port: 5432, extra: ['a', 'b'] },
    },
  });
  assert.equal(readFileSync(`${root}/a/b/plain.txt`, 'utf8'), 'hello\n');
  assert.equal(statSync(`${root}/a/b/plain.txt`).mode & 0o7777, 0o600);
  assert.deepEqual(JSON.parse(readFileSync(`${root}/data.json`, 'utf8')), { name: 'web', ports: [80, 443], tls: { on: true } });
  assert.match(readFileSync(`${root}/data.json`, 'utf8'), /^\{\n {4}"name": "web",/);
  assert.equal(statSync(`${root}/data.json`).mode & 0o7777, 0o666 & ~process.umask(), '0666 less the umask (0644 under 022)');
  assert.deepEqual([...readFileSync(`${root}/bin.dat`)], [0, 1, 2, 255]);
  assert.equal(statSync(`${root}/bin.dat`).mode & 0o7777, 0o755);
  assert.equal(readFileSync(`${root}/tpl.conf`, 'utf8'), 'server db&lt;1&gt;:5432\na;b;');
  assert.equal(context.changes.files.size, 4);
});

test('a mode 120xxx makes a symlink to the content; a second run changes nothing', async (t) => {
  const root = tempRoot(t);
  writeFileSync(`${root}/target`, 'x');
  const files = { [`${root}/link`]: { content: `${root}/target`, mode: '120777' }, [`${root}/f`]: { content: 'same', mode: '000640' } };
  const first = fakeContext(recordingRunner()).context;
  await applyFiles(first, files);
  assert.ok(lstatSync(`${root}/link`).isSymbolicLink());
  assert.equal(readlinkSync(`${root}/link`), `${root}/target`);
  const second = fakeContext(recordingRunner()).context;
  await applyFiles(second, files);
  assert.equal(second.changes.files.size, 0);
  writeFileSync(`${root}/f`, 'edited');
  await applyFiles(second, files);
  assert.deepEqual([...second.changes.files], [`${root}/f`]);
  assert.equal(readFileSync(`${root}/f`, 'utf8'), 'same');
});

test('a shorter file replaces a longer one whole; an existing mode is kept when none is given', async (t) => {
  const root = tempRoot(t);
  writeFileSync(`${root}/f`, 'a much longer previous content', { mode: 0o600 });
  await applyFiles(fakeContext(recordingRunner()).context, { [`${root}/f`]: { content: 'short' } });
  assert.equal(readFileSync(`${root}/f`, 'utf8'), 'short');
  assert.equal(statSync(`${root}/f`).mode & 0o7777, 0o600);
});

test('a path that is a symlink is written through it, as the original does: the link stays, its target gets the content', async (t) => {
  const root = tempRoot(t);
  mkdirSync(`${root}/real`);
  writeFileSync(`${root}/real/resolv.conf`, 'old\n', { mode: 0o640 });
  symlinkSync('real/resolv.conf', `${root}/resolv.conf`);
  symlinkSync(`${root}/resolv.conf`, `${root}/chain`);
  symlinkSync('missing.conf', `${root}/dangling`);
  const { context } = fakeContext(recordingRunner());
  await applyFiles(context, {
    [`${root}/resolv.conf`]: { content: 'nameserver 127.0.0.53\n' },
    [`${root}/dangling`]: { content: 'made\n', mode: '000600' },
  });
  assert.ok(lstatSync(`${root}/resolv.conf`).isSymbolicLink(), 'the link is kept');
  assert.equal(readlinkSync(`${root}/resolv.conf`), 'real/resolv.conf');
  assert.equal(readFileSync(`${root}/real/resolv.conf`, 'utf8'), 'nameserver 127.0.0.53\n');
  assert.equal(statSync(`${root}/real/resolv.conf`).mode & 0o7777, 0o640, "the target's mode is kept, not the link's 0777");
  assert.ok(lstatSync(`${root}/dangling`).isSymbolicLink());
  assert.equal(readFileSync(`${root}/missing.conf`, 'utf8'), 'made\n');
  assert.equal(statSync(`${root}/missing.conf`).mode & 0o7777, 0o600);
  assert.equal(context.changes.files.size, 2);

  await applyFiles(context, { [`${root}/chain`]: { content: 'via two links\n', mode: '000644' } });
  assert.ok(lstatSync(`${root}/chain`).isSymbolicLink());
  assert.equal(readFileSync(`${root}/real/resolv.conf`, 'utf8'), 'via two links\n');
  assert.equal(statSync(`${root}/real/resolv.conf`).mode & 0o7777, 0o644);

  const again = fakeContext(recordingRunner()).context;
  await applyFiles(again, { [`${root}/resolv.conf`]: { content: 'via two links\n' } });
  assert.equal(again.changes.files.size, 0, 'the same content through the link is no change');

  symlinkSync('loop-b', `${root}/loop-a`);
  symlinkSync('loop-a', `${root}/loop-b`);
  await assert.rejects(applyFiles(again, { [`${root}/loop-a`]: { content: 'x' } }), /loop-a: too many levels of symbolic links/);
});

test('source is downloaded (through the injected fetcher) and may be a template', async (t) => {
  const root = tempRoot(t);
  const fetched: string[] = [];
  const fetchUrl = async (url: string) => {
    fetched.push(url);
    return Buffer.from('port={{port}}');
  };
  await applyFiles(fakeContext(recordingRunner(), { fetchUrl }).context, {
    [`${root}/s`]: { source: 'http://127.0.0.1:1/s.tpl', context: { port: 8 } },
  });
  assert.deepEqual(fetched, ['http://127.0.0.1:1/s.tpl']);
  assert.equal(readFileSync(`${root}/s`, 'utf8'), 'port=8');
});

test('owner and group are looked up with getent and applied', async (t) => {
  const root = tempRoot(t);
  const runner = recordingRunner((command) =>
    command === 'getent passwd nobody'
      ? { exitCode: 0, stdout: 'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' }
      : command === 'getent group daemon'
        ? { exitCode: 0, stdout: 'daemon:x:1:\n' }
        : { exitCode: 2 },
  );
  const { context } = fakeContext(runner);
  const chown = process.getuid?.() === 0;
  await applyFiles(context, { [`${root}/owned`]: { content: 'x', owner: 'nobody', group: 'daemon', mode: '000640' } }).catch(
    (error: Error) => {
      if (chown) throw error;
    },
  );
  assert.deepEqual(
    runner.calls.map((call) => call.command),
    ['getent passwd nobody', 'getent group daemon'],
  );
  if (chown) {
    assert.equal(statSync(`${root}/owned`).uid, 65534);
    assert.equal(statSync(`${root}/owned`).gid, 1);
  }
  await assert.rejects(
    applyFiles(context, { [`${root}/x`]: { content: 'x', owner: 'ghost' } }),
    /files: .*\/x: owner ghost does not exist on this machine/,
  );
});

test('bad entries are StepErrors naming the file', async (t) => {
  const root = tempRoot(t);
  const { context } = fakeContext(recordingRunner());
  const fails = async (meta: unknown, pattern: RegExp, path = `${root}/bad`) =>
    assert.rejects(
      applyFiles(context, { [path]: meta }),
      (error: Error) => error instanceof StepError && error.key === path && pattern.test(error.message),
    );
  await fails({ mode: '000644' }, /needs content or source/);
  await fails({ content: 'x', mode: 'rw-r--r--' }, /mode must be an octal string such as "000644"/);
  await fails({ content: 'x', encoding: 'rot13' }, /encoding must be plain or base64/);
  await fails({ content: '{{#a}}', context: {} }, /context: section \{\{#a\}\} is never closed/);
  await fails({ content: 'x' }, /the path must be absolute/, 'relative/path');
  await fails({ source: 'http://127.0.0.1:1/x' }, /could not download http:\/\/127.0.0.1:1\/x: no fetch in this test/);
  assert.deepEqual(parseMode('/p', 644), { symlink: false, mode: 0o644 });
});

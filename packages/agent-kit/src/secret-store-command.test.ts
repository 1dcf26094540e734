// `hearth-agent secret` as a real process, through hearth-agent's own dispatcher (images/agent/dispatch.ts), against
// the file backend: the value goes in on stdin and never comes out; exit codes 0/1/2/3.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const dispatchModule = join(repoRoot, 'images/agent/dispatch.ts');
const VALUE = 'v4lue-that-must-not-leak';

/** `hearth-agent ARGS...` as a process (the dispatcher run by tsx), with `input` on stdin and HEARTH_ROOT at `root`. */
function agent(args: string[], root: string, input = '') {
  const code =
    `const { dispatch } = await import(${JSON.stringify(dispatchModule)});` +
    `dispatch({ version: 'test', commands: {}, hooks: {} }, ['node', 'hearth-agent', ...process.argv.slice(1)]);`;
  const env: NodeJS.ProcessEnv = { ...process.env, HEARTH_ROOT: root };
  delete env.NODE_TEST_CONTEXT;
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code, '--', ...args], {
    cwd: repoRoot,
    env,
    input,
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.ok(!result.stdout.includes(VALUE) && !result.stderr.includes(VALUE), `the value was printed:\n${result.stdout}${result.stderr}`);
  return result;
}

async function tempRoot(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'hearth-secret-cmd-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  return root;
}

test('secret set reads the value from stdin into the 0600 file store; list shows names only; delete removes it', async (t) => {
  const root = await tempRoot(t);
  const path = join(root, 'var/lib/hearth/credentials.json');
  const set = agent(['secret', 'set', 'hearth/AK1'], root, `${VALUE}\n`);
  assert.equal(set.status, 0, set.stderr);
  assert.equal(set.stderr, `stored secret "hearth/AK1" in ${path}\n`);
  assert.deepEqual(JSON.parse(await readFile(path, 'utf8')), { 'hearth/AK1': VALUE }, 'one trailing newline is dropped');
  assert.equal((await stat(path)).mode & 0o777, 0o600);
  assert.equal(agent(['secret', 'set', 'other', '--path', join(root, 'elsewhere.json')], root, 'x\n\n').status, 0);
  assert.deepEqual(JSON.parse(await readFile(join(root, 'elsewhere.json'), 'utf8')), { other: 'x\n' }, 'only one newline is dropped');

  const list = agent(['secret', 'list'], root);
  assert.deepEqual([list.status, list.stdout], [0, 'hearth/AK1\n']);
  const deleted = agent(['secret', 'delete', 'hearth/AK1'], root);
  assert.equal(deleted.status, 0, deleted.stderr);
  const again = agent(['secret', 'delete', 'hearth/AK1'], root);
  assert.equal(again.status, 3);
  assert.equal(again.stderr, `hearth-agent secret: no secret "hearth/AK1" in ${path}\n`);
  assert.deepEqual([agent(['secret', 'list'], root).stdout], ['']);
});

test('secret refuses a store file with mode 0644 (exit 1, with the chmod), and changes nothing', async (t) => {
  const root = await tempRoot(t);
  const path = join(root, 'var/lib/hearth/credentials.json');
  assert.equal(agent(['secret', 'set', 'hearth/AK1'], root, VALUE).status, 0);
  await chmod(path, 0o644);
  for (const args of [['list'], ['delete', 'hearth/AK1'], ['set', 'hearth/AK1']]) {
    const refused = agent(['secret', ...args], root, 'new');
    assert.equal(refused.status, 1, args.join(' '));
    assert.equal(
      refused.stderr,
      `hearth-agent secret: refusing to use secret file ${path}: file ${path} has mode 0644, wider than 0600; fix: chmod 600 ${path}\n`,
    );
  }
  assert.deepEqual(JSON.parse(await readFile(path, 'utf8')), { 'hearth/AK1': VALUE });
});

test('secret: --help exits 0; usage errors exit 2 naming the problem; an empty value exits 1', async (t) => {
  const root = await tempRoot(t);
  const help = agent(['secret', '--help'], root);
  assert.equal(help.status, 0);
  assert.match(help.stdout, /^usage: hearth-agent secret \[--backend file\|keyring\]/);
  assert.match(agent(['--help'], root).stdout, /built in: .*\bsecret\b/);
  const usage: Array<[string[], RegExp]> = [
    [[], /a command is needed: set, list or delete/],
    [['get', 'x'], /unknown command "get"; use set, list or delete/],
    [['set'], /set takes one NAME, got 0/],
    [['set', 'a', VALUE], /set takes one NAME, got 2/],
    [['list', 'a'], /list takes no argument, got 1/],
    [['--bogus', 'list'], /Unknown option '--bogus'/],
    [['--backend', 'vault', 'list'], /unknown secret store backend "vault"; use one of: file, keyring/],
    [['--backend', 'file', '--service', 's', 'list'], /`service` applies to the keyring backend only/],
    [['set', ''], /a secret name must be a non-empty string/],
  ];
  for (const [args, message] of usage) {
    const result = agent(['secret', ...args], root, 'x');
    assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, message);
  }
  const empty = agent(['secret', 'set', 'a'], root, '\n');
  assert.equal(empty.status, 1);
  assert.match(
    empty.stderr,
    /^hearth-agent secret: set read an empty value from stdin; pipe the value in: hearth-agent secret set a < FILE\n$/,
  );
});

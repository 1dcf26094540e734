// Side by side: Debian's os-collect-config (python3-os-collect-config 12) and hearth's, given the
// same inputs: a `local` directory and a `request` URL on 127.0.0.1. After each `--one-time`
// collection the cache directories (every file's name, bytes and mode), the backup copy, the
// OS_CONFIG_FILES the command saw and the exit codes must be identical; so must `--print`.
// The original runs in the conformance sandbox (clients.ts); ours runs directly with HEARTH_ROOT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { runClient } from './clients.ts';

const execFileAsync = promisify(execFile);
const OURS = new URL('../../packages/collect-config/bin/os-collect-config.js', import.meta.url).pathname;

/** Only the original os-collect-config is needed here (not the whole CLIENTS list of clients.ts). */
function skipUnlessOriginal(): false | string {
  if (spawnSync('sh', ['-c', 'command -v os-collect-config'], { stdio: 'ignore' }).status === 0) return false;
  const message = "Debian's os-collect-config is missing: apt-get install -y python3-os-collect-config";
  if (process.env.CI === 'true') throw new Error(`${message} (CI=true: a missing client is a failure)`);
  return message;
}

const skip = skipUnlessOriginal();

/** The request source: a document whose deployments are exploded, with a Last-Modified as Swift sends. */
function requestDocument(round: number): Record<string, unknown> {
  return {
    deployments: [
      { name: 'apply', group: 'os-apply-config', id: 'd1', config: { service: { port: 8080 + round, tags: ['a', 'b'] } } },
      { name: 'ungrouped', id: 'd2', config: { motd: `héllo ☃ round ${round}` } },
      { name: 'run-me', group: 'script', id: 'd3', config: '#!/bin/sh\necho hi' },
    ],
    'os-collect-config': { collectors: ['request'], request: { metadata_url: 'http://127.0.0.1/x' } },
    nested: { empty: {}, list: [], null: null, flag: true, n: -1.5 },
  };
}

async function startRequestServer(document: () => Record<string, unknown>): Promise<{ url: string; server: Server }> {
  const server = createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'application/json', 'last-modified': 'Wed, 25 Nov 2026 10:00:00 GMT' });
    response.end(request.method === 'HEAD' ? undefined : JSON.stringify(document()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/AUTH_x/c/o?temp_url_sig=ab&temp_url_expires=9`, server };
}

interface Side {
  name: 'original' | 'ours';
  dir: string;
  cachedir: string;
  backupdir: string;
  envFile: string;
}

function side(root: string, name: Side['name']): Side {
  const dir = join(root, name);
  mkdirSync(dir);
  return { name, dir, cachedir: join(dir, 'cache'), backupdir: join(dir, 'backup'), envFile: join(dir, 'os-config-files') };
}

function argvFor(
  s: Side,
  common: { conf: string; localDir: string; url: string },
  command: string | undefined,
  extra: string[] = [],
): string[] {
  return [
    '--config-file',
    common.conf,
    '--cachedir',
    s.cachedir,
    '--backup-cachedir',
    s.backupdir,
    '--local-path',
    common.localDir,
    '--request-metadata-url',
    common.url,
    ...(command === undefined ? [] : ['--one-time', '--command', command.replaceAll('@ENV@', s.envFile)]),
    ...extra,
    'local',
    'request',
  ];
}

/** Runs one side; the original in the sandbox, ours as a plain child (async: the request server lives in this process). */
async function runSide(s: Side, argv: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  if (s.name === 'original') {
    const run = await runClient(['os-collect-config', ...argv], { timeoutMs: 60_000 });
    return { exitCode: run.exitCode, stdout: run.stdout, stderr: run.stderr };
  }
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: s.dir, HEARTH_ROOT: join(s.dir, 'root'), LANG: 'C.UTF-8' };
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [OURS, ...argv], { env, encoding: 'utf8', timeout: 60_000 });
    return { exitCode: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { exitCode: typeof failed.code === 'number' ? failed.code : -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** Every file of a directory: name -> {text with the side's dir replaced by <DIR>, mode}. Temp files would show up as extra names. */
function snapshot(dir: string, sideDir: string): Record<string, { text: string; mode: string }> {
  if (!existsSync(dir)) return {};
  const files: Record<string, { text: string; mode: string }> = {};
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    files[name] = { text: readFileSync(path, 'utf8').replaceAll(sideDir, '<DIR>'), mode: (statSync(path).mode & 0o777).toString(8) };
  }
  return files;
}

function osConfigFiles(s: Side): string[] | undefined {
  if (!existsSync(s.envFile)) return undefined;
  const text = readFileSync(s.envFile, 'utf8');
  rmSync(s.envFile);
  return text.split(':').map((path) => path.replace(s.dir, '<DIR>'));
}

test(
  'os-collect-config --one-time from local and request: same cache files, modes, backup and OS_CONFIG_FILES as the original',
  { skip },
  async () => {
    const root = mkdtempSync(join(tmpdir(), 'hearth-occ-conf-'));
    let round = 1;
    const { url, server } = await startRequestServer(() => requestDocument(round));
    try {
      const localDir = join(root, 'local-data');
      mkdirSync(localDir, { mode: 0o755 });
      chmodSync(localDir, 0o755);
      writeFileSync(join(localDir, 'b.json'), JSON.stringify({ from: 'b', list: [1, 2, { deep: 'é' }] }));
      writeFileSync(join(localDir, 'a'), '{"from": "a", "z": 1, "y": 2}');
      writeFileSync(join(localDir, 'Zeta'), '["upper", "sorts", "first"]');
      writeFileSync(join(localDir, '.hidden'), 'ignored');
      const conf = join(root, 'os-collect-config.conf');
      writeFileSync(conf, '[DEFAULT]\n');
      const common = { conf, localDir, url };
      const sides = [side(root, 'original'), side(root, 'ours')];
      // `$$`: both pass option values through oslo-style interpolation, so a literal `$` is doubled.
      const record = `printf '%s' "$$OS_CONFIG_FILES" > @ENV@`;

      const compare = async (label: string, command: string, expectedExit: number, extra: string[] = []) => {
        const results = [];
        for (const s of sides) results.push(await runSide(s, argvFor(s, common, command, extra)));
        const [original, ours] = results as [Awaited<ReturnType<typeof runSide>>, Awaited<ReturnType<typeof runSide>>];
        assert.equal(original.exitCode, expectedExit, `${label}: the original exited ${original.exitCode}\n${original.stderr}`);
        assert.equal(ours.exitCode, original.exitCode, `${label}: exit code\n${ours.stderr}`);
        const [originalSide, oursSide] = sides as [Side, Side];
        const files = osConfigFiles(originalSide);
        assert.deepEqual(osConfigFiles(oursSide), files, `${label}: OS_CONFIG_FILES`);
        const cache = snapshot(originalSide.cachedir, originalSide.dir);
        assert.deepEqual(snapshot(oursSide.cachedir, oursSide.dir), cache, `${label}: cache directory`);
        assert.deepEqual(
          snapshot(oursSide.backupdir, oursSide.dir),
          snapshot(originalSide.backupdir, originalSide.dir),
          `${label}: backup`,
        );
        return { files, cache };
      };

      const first = await compare('first collection', record, 0);
      assert.deepEqual(first.files, [
        '<DIR>/cache/Zeta.json',
        '<DIR>/cache/a.json',
        '<DIR>/cache/b.json.json',
        '<DIR>/cache/request.json',
        '<DIR>/cache/apply.json',
        '<DIR>/cache/ungrouped.json',
      ]);
      assert.ok(first.cache['request.json.last'] && first.cache['request.json.orig'] && first.cache['os_config_files.json']);
      assert.match(first.cache['ungrouped.json']!.text, /h\\u00e9llo \\u2603/);

      const unchanged = await compare('nothing changed', record, 0);
      assert.equal(unchanged.files, undefined, 'the command does not run when nothing changed');

      round = 2;
      writeFileSync(join(localDir, 'a'), '{"from": "a", "z": 2}');
      const failed = await compare('a failing command', `${record}; exit 3`, 3);
      assert.notEqual(failed.cache['a.json']!.text, failed.cache['a.json.last']!.text, 'not committed after a failure');

      const retried = await compare('the retry', record, 0);
      assert.equal(retried.cache['a.json']!.text, retried.cache['a.json.last']!.text);
      assert.equal(retried.cache['apply.json.orig']!.text, first.cache['apply.json']!.text, '.orig keeps the first version');

      const forced = await compare('--force with a failing command', `${record}; exit 2`, 2, ['--force']);
      assert.deepEqual(forced.files, first.files, '--force runs the command with every file although nothing changed');
    } finally {
      server.close();
      rmSync(root, { recursive: true, force: true });
    }
  },
);

test('os-collect-config --print from local and request: the same JSON text as the original', { skip }, async () => {
  const root = mkdtempSync(join(tmpdir(), 'hearth-occ-conf-'));
  const { url, server } = await startRequestServer(() => requestDocument(7));
  try {
    const localDir = join(root, 'local-data');
    mkdirSync(localDir);
    chmodSync(localDir, 0o755);
    writeFileSync(join(localDir, 'x.json'), '{"k": ["v", {"é": null}]}');
    const conf = join(root, 'os-collect-config.conf');
    writeFileSync(conf, '[DEFAULT]\n');
    const outputs = [];
    for (const s of [side(root, 'original'), side(root, 'ours')]) {
      const run = await runSide(s, argvFor(s, { conf, localDir, url }, undefined, ['--print']));
      assert.equal(run.exitCode, 0, `${s.name}: ${run.stderr}`);
      assert.equal(existsSync(s.cachedir), false, `${s.name} --print stores nothing`);
      outputs.push(run.stdout);
    }
    assert.equal(outputs[1], outputs[0]);
    assert.deepEqual(Object.keys(JSON.parse(outputs[0]!)), ['x.json', 'request', 'apply', 'ungrouped']);
  } finally {
    server.close();
    rmSync(root, { recursive: true, force: true });
  }
});

// Debian's os-refresh-config (python3-os-refresh-config 12, with dib-run-parts from
// python3-dib-utils) and ours, side by side on the same base directories: the same phases and
// scripts run in the same order with the same environment, error.d runs on failure, and the exit
// codes agree. Both touch only the temp dirs given here (base dir, lock file), so they run
// directly, not in the clients.ts sandbox (whose files cannot be executable scripts).
//
// Deliberate differences, not compared: our log lines (JSON by default; with `--log-format text`
// os-refresh-config's own lines are agent-kit's text format, dib-run-parts' lines are identical),
// and the lock, a pid file (agent-kit) instead of flock(2), so each side is held with its own kind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireLock } from '@hearth/agent-kit';

const ORIGINALS = ['os-refresh-config', 'dib-run-parts'];
const OURS = {
  'os-refresh-config': fileURLToPath(new URL('../../packages/refresh-config/bin/os-refresh-config.js', import.meta.url)),
  'dib-run-parts': fileURLToPath(new URL('../../packages/refresh-config/bin/dib-run-parts.js', import.meta.url)),
};

/** False when Debian's originals are on PATH; a message on a dev machine; throws under CI=true. */
function skipUnlessOriginals(): false | string {
  const missing = ORIGINALS.filter((name) => spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status !== 0);
  if (missing.length === 0) return false;
  const message = `Debian originals missing (${missing.join(', ')}): apt-get install -y python3-os-refresh-config`;
  if (process.env.CI === 'true') throw new Error(`${message} (CI=true: a missing original is a failure)`);
  return message;
}

const skip = skipUnlessOriginals();

type Side = 'debian' | 'hearth';

/** What one side did: exit code, the trace its scripts wrote, and its phase/script events read from stderr. */
interface SideResult {
  exitCode: number | null;
  trace: string[];
  events: string[];
  stdout: string;
  stderr: string;
}

/** A temp dir with a base dir, removed after the test. */
function workspace(t: { after: (fn: () => void) => void }): { root: string; base: string } {
  const root = mkdtempSync(join(tmpdir(), 'hearth-orc-conf-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const base = join(root, 'base');
  mkdirSync(base);
  return { root, base };
}

/** An executable file; `#!/bin/sh` is added unless the body has its own first line. */
function script(path: string, body: string, mode = 0o755): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, body.startsWith('#!') || mode === 0o644 ? body : `#!/bin/sh\n${body}\n`, { mode });
}

/** A script that appends its label (its dir and name, then `suffix`) to $TRACE, then runs `after`. */
function traced(base: string, relative: string, suffix = '', after = ''): void {
  script(join(base, relative), `echo "$(basename "$(dirname "$0")")/$(basename "$0")${suffix}" >> "$TRACE"\n${after}`);
}

/** The phase, script and error-handler events in a stderr, in order, whichever side wrote it. */
function events(stderr: string): string[] {
  const found: string[] = [];
  for (const line of stderr.split('\n')) {
    const phase = /Starting phase (\S+)/.exec(line);
    const running = /^dib-run-parts .* Running (\S+)$/.exec(line);
    if (phase) found.push(`phase ${phase[1]}`);
    else if (running) found.push(`run ${running[1]}`);
    else if (line.includes('Calling error handlers')) found.push('error handlers');
    else if (line.includes('Aborting...')) found.push('aborting');
  }
  return found;
}

/** Runs one side's `command` with `args`, TRACE in the side's own file, and a built (not inherited) environment. */
function runSide(
  side: Side,
  command: keyof typeof OURS,
  args: string[],
  root: string,
  env: Record<string, string> = {},
  timeoutMs = 60_000,
): Promise<SideResult> {
  const trace = join(root, `${side}.trace`);
  const argv = side === 'debian' ? [command, ...args] : [process.execPath, OURS[command], ...args];
  const fullEnv = {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: root,
    LANG: 'C.UTF-8',
    TRACE: trace,
    ...env,
  };
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { env: fullEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      let lines: string[] = [];
      try {
        lines = readFileSync(trace, 'utf8').split('\n').filter(Boolean);
      } catch {
        // no script wrote anything
      }
      resolve({ exitCode: code, trace: lines, events: events(stderr), stdout, stderr });
    });
  });
}

/** os-refresh-config on both sides over `base`, each with its own lock file; ours logs text so that events() reads both. */
async function refreshBoth(root: string, base: string, args: string[] = [], env: Record<string, string> = {}) {
  const sideEnv = { OS_REFRESH_CONFIG_BASE_DIR: base, ...env };
  const debian = await runSide('debian', 'os-refresh-config', ['--lockfile', join(root, 'debian.lock'), ...args], root, sideEnv);
  const hearth = await runSide(
    'hearth',
    'os-refresh-config',
    ['--log-format', 'text', '--lockfile', join(root, 'hearth.lock'), ...args],
    root,
    sideEnv,
  );
  return { debian, hearth };
}

/** Asserts both sides agree on exit code, trace and events, and returns Debian's for further checks. */
function assertSame({ debian, hearth }: { debian: SideResult; hearth: SideResult }): SideResult {
  const context = `\n--- debian stderr ---\n${debian.stderr}\n--- hearth stderr ---\n${hearth.stderr}`;
  assert.equal(hearth.exitCode, debian.exitCode, `exit codes differ${context}`);
  assert.deepEqual(hearth.trace, debian.trace, `scripts ran differently${context}`);
  assert.deepEqual(hearth.events, debian.events, `phase/script events differ${context}`);
  return debian;
}

test('phases, script selection and order are the same', { skip }, async (t) => {
  const { root, base } = workspace(t);
  for (const phase of ['pre-configure', 'configure', 'post-configure', 'migration']) {
    for (const name of ['10-ten', '9-nine', '010-ten-padded', 'Zed', 'alpha', '_under', '-5-negative']) traced(base, `${phase}.d/${name}`);
  }
  traced(base, 'configure.d/20-skipped.sh');
  script(join(base, 'configure.d/30-not-executable'), 'echo configure.d/30-not-executable >> "$TRACE"\n', 0o644);
  traced(base, 'configure.d/40-in-subdir/01-nested');
  traced(base, 'elsewhere/50-target');
  symlinkSync(join(base, 'elsewhere/50-target'), join(base, 'configure.d/50-link'));
  symlinkSync(join(base, 'nowhere'), join(base, 'configure.d/60-broken-link'));
  traced(base, 'error.d/10-error');
  const debian = assertSame(await refreshBoth(root, base, [], { OS_CONFIG_FILES: '/a.json:/b.json' }));
  assert.equal(debian.exitCode, 0);
  assert.equal(debian.trace.length, 4 * 7 + 1, debian.trace.join('\n'));
  assert.ok(debian.trace.includes('configure.d/50-link'), 'a symlink to an executable runs');
});

test('a missing phase dir is skipped; OS_CONFIG_FILES and other env reach the scripts', { skip }, async (t) => {
  const { root, base } = workspace(t);
  traced(base, 'configure.d/10-env', ' $OS_CONFIG_FILES');
  traced(base, 'migration.d/10-env', ' $OS_CONFIG_FILES');
  const debian = assertSame(await refreshBoth(root, base, [], { OS_CONFIG_FILES: '/a.json:/b.json' }));
  assert.deepEqual(debian.trace, ['configure.d/10-env /a.json:/b.json', 'migration.d/10-env /a.json:/b.json']);
});

test('a failing script stops its phase, error.d runs, later phases do not, exit 1', { skip }, async (t) => {
  const { root, base } = workspace(t);
  traced(base, 'pre-configure.d/10-ok');
  traced(base, 'configure.d/10-ok');
  traced(base, 'configure.d/20-fails', '', 'exit 7');
  traced(base, 'configure.d/30-never');
  traced(base, 'post-configure.d/10-never');
  traced(base, 'error.d/10-handler');
  traced(base, 'error.d/20-handler-fails', '', 'exit 3');
  traced(base, 'error.d/30-after-failed-handler');
  const debian = assertSame(await refreshBoth(root, base));
  assert.equal(debian.exitCode, 1);
  assert.deepEqual(debian.trace, [
    'pre-configure.d/10-ok',
    'configure.d/10-ok',
    'configure.d/20-fails',
    'error.d/10-handler',
    'error.d/20-handler-fails',
  ]);
  assert.deepEqual(debian.events.slice(-4), [
    'error handlers',
    `run ${base}/error.d/10-handler`,
    `run ${base}/error.d/20-handler-fails`,
    'aborting',
  ]);
});

test('a failing phase without error.d exits 1 all the same', { skip }, async (t) => {
  const { root, base } = workspace(t);
  traced(base, 'migration.d/10-fails', '', 'exit 1');
  assert.equal(assertSame(await refreshBoth(root, base)).exitCode, 1);
});

test('environment.d is sourced before each phase, in byte order; a failing file fails the phase', { skip }, async (t) => {
  const { root, base } = workspace(t);
  mkdirSync(join(base, 'environment.d'));
  writeFileSync(join(base, 'environment.d', '9-second'), 'export ORDER="${ORDER:-} 9-second"\n');
  writeFileSync(join(base, 'environment.d', '10-first'), 'export ORDER="${ORDER:-} 10-first"\nNOT_EXPORTED=x\n');
  writeFileSync(join(base, 'environment.d', 'with.dot'), 'export ORDER="$ORDER with.dot"\n');
  traced(base, 'configure.d/10-show', ' [$ORDER] [${NOT_EXPORTED:-}]');
  traced(base, 'post-configure.d/10-show', ' [$ORDER]');
  const debian = assertSame(await refreshBoth(root, base));
  assert.deepEqual(debian.trace, [
    'configure.d/10-show [ 10-first 9-second with.dot] []',
    'post-configure.d/10-show [ 10-first 9-second with.dot]',
  ]);

  writeFileSync(join(base, 'environment.d', '50-broken'), 'false\n');
  traced(base, 'error.d/10-handler');
  const failing = assertSame(await refreshBoth(root, base));
  assert.equal(failing.exitCode, 1);
  assert.deepEqual(failing.trace.slice(debian.trace.length), [], 'no script runs, not even error.d (it sources the same files)');
});

test('RUN_PARTS_REGEX replaces the name filter', { skip }, async (t) => {
  const { root, base } = workspace(t);
  traced(base, 'configure.d/10-a.sh');
  traced(base, 'configure.d/20-b');
  const debian = assertSame(await refreshBoth(root, base, [], { RUN_PARTS_REGEX: '\\.sh$' }));
  assert.deepEqual(debian.trace, ['configure.d/10-a.sh']);
});

test('--timeout kills the running script and its children, then error.d runs and the run exits 1', { skip }, async (t) => {
  const { root, base } = workspace(t);
  traced(base, 'configure.d/10-slow', '', 'sleep 30 & wait\necho configure.d/10-slow finished >> "$TRACE"');
  traced(base, 'configure.d/20-never');
  traced(base, 'error.d/10-handler');
  const started = Date.now();
  const debian = assertSame(await refreshBoth(root, base, ['--timeout', '1']));
  assert.ok(Date.now() - started < 30_000, 'neither side waited for the sleep');
  assert.equal(debian.exitCode, 1);
  assert.deepEqual(debian.trace, ['configure.d/10-slow', 'error.d/10-handler']);
});

test('a held lock fails fast with exit 11 and runs nothing', { skip }, async (t) => {
  const { root, base } = workspace(t);
  traced(base, 'configure.d/10-x');
  const debianLock = join(root, 'debian.lock');
  const holder = spawn('flock', ['--exclusive', debianLock, 'sleep', '30'], { stdio: 'ignore' });
  t.after(() => holder.kill('SIGKILL'));
  const ourLock = await acquireLock(join(root, 'hearth.lock'));
  t.after(() => ourLock.release());
  for (let tries = 0; spawnSync('flock', ['--nonblock', debianLock, 'true']).status === 0; tries++) {
    assert.ok(tries < 100, 'flock holder did not start');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const debian = assertSame(await refreshBoth(root, base));
  assert.equal(debian.exitCode, 11);
  assert.deepEqual(debian.trace, []);
});

test('--print-base and --print-phases print the same', { skip }, async (t) => {
  const { root, base } = workspace(t);
  for (const args of [['--print-base'], ['--print-phases']]) {
    const { debian, hearth } = await refreshBoth(root, base, args);
    assert.equal(hearth.exitCode, 0);
    assert.equal(debian.exitCode, 0);
    assert.equal(hearth.stdout, debian.stdout);
  }
});

test('dib-run-parts: --list, exit statuses of killed, unstartable and shebang-less scripts, a missing dir', { skip }, async (t) => {
  const { root, base } = workspace(t);
  const dir = join(base, 'parts');
  traced(base, 'parts/20-b');
  traced(base, 'parts/10-a');
  traced(base, 'parts/x.sh');
  const list = await Promise.all((['debian', 'hearth'] as const).map((side) => runSide(side, 'dib-run-parts', ['--list', dir], root)));
  assert.equal(list[1]!.stdout, list[0]!.stdout);
  assert.equal(list[0]!.stdout, `${dir}/10-a\n${dir}/20-b\n`);

  const cases: Array<[string, string, number]> = [
    ['killed', '#!/bin/sh\nkill -TERM $$\n', 143],
    ['bad-interpreter', '#!/nonexistent/interpreter\n', 127],
    ['binary', '\u0000\u0001\u0002binary\n', 126],
    ['no-shebang', 'echo "no-shebang ${BASH_VERSION:+in bash}" >> "$TRACE"\nexit 4\n', 4],
  ];
  for (const [name, body, expected] of cases) {
    const caseDir = join(root, name);
    mkdirSync(caseDir);
    writeFileSync(join(caseDir, '10-case'), body, { mode: 0o755 });
    const debian = await runSide('debian', 'dib-run-parts', [caseDir], root);
    const hearth = await runSide('hearth', 'dib-run-parts', [caseDir], root);
    assert.equal(debian.exitCode, expected, `${name}: ${debian.stderr}`);
    assert.equal(hearth.exitCode, debian.exitCode, `${name}: ${hearth.stderr}`);
    assert.deepEqual(hearth.trace, debian.trace, name);
    if (name === 'no-shebang') assert.equal(debian.trace.at(-1), 'no-shebang in bash', 'bash runs a file without #!');
  }
  const missing = await Promise.all(
    (['debian', 'hearth'] as const).map((side) => runSide(side, 'dib-run-parts', [join(root, 'nope')], root)),
  );
  assert.deepEqual(
    missing.map((side) => side.exitCode),
    [1, 1],
  );
});

import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { isProcessAlive, processTree, signalAll, stopProcessTree } from './process-tree.ts';

test('processTree finds a child and its grandchildren; signalAll stops them and ignores the dead', async (t) => {
  const child = spawn('sh', ['-c', 'sleep 30 & sleep 30 & echo ready; wait'], { stdio: ['ignore', 'pipe', 'ignore'] });
  t.after(() => child.kill('SIGKILL'));
  await once(child.stdout, 'data');
  const tree = processTree(child.pid!);
  assert.equal(tree[0], child.pid);
  assert.equal(tree.length, 3, `tree ${tree.join(',')}`);
  assert.ok(!tree.includes(process.pid));
  signalAll(tree, 'SIGKILL');
  await once(child, 'exit');
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(processTree(child.pid!), [child.pid], 'nothing is left below it');
  assert.doesNotThrow(() => signalAll(tree, 'SIGKILL'));
});

/** The state letter of /proc/<pid>/stat (`S`, `R`, `Z`...), or `gone`. */
function stateOf(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return 'gone';
  }
}

/** Killed processes re-parented to init stay zombies until init reaps them (some container inits never do). */
function isDead(pid: number): boolean {
  return ['Z', 'X', 'gone'].includes(stateOf(pid));
}

/** Whether `pid` dies within `ms` (a SIGKILLed process takes a moment to exit). */
async function diesSoon(pid: number, ms = 1000): Promise<boolean> {
  for (const deadline = Date.now() + ms; !isDead(pid) && Date.now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 10));
  return isDead(pid);
}

/** Starts `script` with sh; resolves with the child and the first line it prints (a pid the script reports). */
async function startShell(script: string, options: { detached?: boolean } = {}): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'ignore'], detached: options.detached ?? false });
  const lines = createInterface({ input: child.stdout });
  const [line] = (await once(lines, 'line')) as [string];
  lines.close();
  return { child, line };
}

/** SIGKILLs what a failed test left running (a daemon outside the tree included). */
function cleanUp(t: TestContext, pids: () => number[]): void {
  t.after(() =>
    signalAll(
      pids().filter((pid) => !isDead(pid)),
      'SIGKILL',
    ),
  );
}

test('isProcessAlive: a zombie is dead, 0 and negative numbers are not pids, a running process is alive', async (t) => {
  // `sleep 0` ends at once; `exec sleep 30` takes over its parent and never reaps it.
  const { child } = await startShell('sleep 0 & echo started; exec sleep 30');
  cleanUp(t, () => [child.pid!]);
  let zombie: number | undefined;
  for (let tries = 0; zombie === undefined && tries < 100; tries += 1) {
    zombie = processTree(child.pid!).find((pid) => pid !== child.pid && stateOf(pid) === 'Z');
    if (zombie === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.ok(zombie !== undefined, 'a zombie below the child');
  assert.equal(isProcessAlive(zombie), false, `zombie ${zombie} is not alive`);
  assert.equal(isProcessAlive(child.pid!), true);
  assert.equal(isProcessAlive(process.pid), true);
  assert.equal(isProcessAlive(0), false, 'kill(0, 0) is our own process group');
  assert.equal(isProcessAlive(-1), false, 'kill(-1, 0) is every process');
  assert.equal(isProcessAlive(Number.NaN), false);
});

test('stopProcessTree SIGKILLs, after the grace, a process below that ignores SIGTERM and left the session, though the root is gone', async (t) => {
  // The root dies on SIGTERM; setsid moves the child out of the root's session and group.
  const { child, line } = await startShell(`setsid sh -c 'trap "" TERM; echo $$; exec sleep 30' & wait`);
  const stubborn = Number(line);
  cleanUp(t, () => [child.pid!, stubborn]);
  const rootExited = once(child, 'exit');
  const started = Date.now();
  const stopped = stopProcessTree(child.pid!, { graceMs: 400 });
  await rootExited;
  assert.equal(isDead(stubborn), false, 'it ignored the SIGTERM');
  await stopped;
  assert.ok(Date.now() - started >= 350, 'the grace was given');
  assert.ok(await diesSoon(stubborn), `process ${stubborn} is ${stateOf(stubborn)} after the SIGKILL`);
});

test('stopProcessTree SIGKILLs after the grace even when the wall clock steps back two years meanwhile (NTP)', async (t) => {
  const { child, line } = await startShell(`setsid sh -c 'trap "" TERM; echo $$; exec sleep 30' & wait`);
  const stubborn = Number(line);
  cleanUp(t, () => [child.pid!, stubborn]);
  const realNow = Date.now;
  t.after(() => (Date.now = realNow));
  const stopped = stopProcessTree(child.pid!, { graceMs: 300 });
  Date.now = () => realNow() - 2 * 365 * 24 * 3600_000;
  const late = new Promise<string>((resolve) => setTimeout(() => resolve('no SIGKILL after 3 s'), 3000).unref());
  assert.equal(await Promise.race([stopped.then(() => 'stopped'), late]), 'stopped');
  Date.now = realNow;
  assert.ok(await diesSoon(stubborn), `process ${stubborn} is ${stateOf(stubborn)} after the SIGKILL`);
});

test('stopProcessTree with group reaches a daemon re-parented to init that stayed in the group', async (t) => {
  // A double fork: the subshell exits at once, so the daemon is no longer below the root, only in its group.
  const { child, line } = await startShell(`(sh -c 'trap "" TERM; exec sleep 30' & echo $!); exec sleep 30`, { detached: true });
  const daemon = Number(line);
  cleanUp(t, () => [child.pid!, daemon]);
  for (let tries = 0; processTree(child.pid!).includes(daemon) && tries < 100; tries += 1)
    await new Promise((resolve) => setTimeout(resolve, 20));
  assert.ok(!processTree(child.pid!).includes(daemon), 'the daemon left the tree');
  await stopProcessTree(child.pid!, { graceMs: 300, group: true });
  assert.ok(await diesSoon(child.pid!), 'the leader is stopped');
  assert.ok(await diesSoon(daemon), `daemon ${daemon} is ${stateOf(daemon)}`);
});

test('stopProcessTree SIGKILLs what a survivor started during the grace, not only what was there at the SIGTERM', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'process-tree-'));
  const latePidFile = join(dir, 'late.pid');
  // The survivor ignores SIGTERM and starts a new child 300 ms after it (the child inherits the ignored SIGTERM).
  const survivorScript = `trap "" TERM; echo $$; sleep 0.3; sleep 30 & echo $! > ${latePidFile}; wait`;
  const { child, line } = await startShell(`sh -c '${survivorScript}' & wait`);
  const survivor = Number(line);
  const late = (): number[] => {
    try {
      return [Number(readFileSync(latePidFile, 'utf8'))];
    } catch {
      return [];
    }
  };
  cleanUp(t, () => [child.pid!, survivor, ...late()]);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  await stopProcessTree(child.pid!, { graceMs: 900 });
  assert.equal(late().length, 1, 'the survivor started its late child during the grace');
  assert.ok(await diesSoon(survivor), `survivor ${survivor} is ${stateOf(survivor)}`);
  assert.ok(await diesSoon(late()[0]!), `late child ${late()[0]} is ${stateOf(late()[0]!)}`);
});

test('stopProcessTree ends as soon as only zombies are left, without waiting the grace', async (t) => {
  const { child } = await startShell('sleep 0 & echo started; exec sleep 30');
  cleanUp(t, () => [child.pid!]);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const started = Date.now();
  await stopProcessTree(child.pid!, { graceMs: 5000 });
  assert.ok(Date.now() - started < 2500, `stopped after ${Date.now() - started} ms, not the 5000 ms grace`);
  assert.ok(await diesSoon(child.pid!));
});

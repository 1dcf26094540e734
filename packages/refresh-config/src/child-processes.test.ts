import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { ChildTracker, descendantPids, parentPidOf } from './child-processes.ts';

test('reads the parent pid after the command name, even one with spaces and parentheses', () => {
  assert.equal(parentPidOf('4242 (my (odd) name) S 17 4242 4242 0 -1'), 17);
  assert.equal(parentPidOf('garbage'), undefined);
});

/** Killed grandchildren are reparented and may stay zombies until their new parent reaps them. */
function isGoneOrZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

test('finds grandchildren and kills a tracked child with everything below it', async () => {
  const child = spawn('sh', ['-c', 'sleep 30 & sleep 30 & wait'], { stdio: 'ignore' });
  let below = descendantPids(child.pid!);
  for (let tries = 0; below.length < 2 && tries < 100; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    below = descendantPids(child.pid!);
  }
  assert.equal(below.length, 2, `two sleeps below ${child.pid}: ${below.join(' ')}`);
  const tracker = new ChildTracker();
  tracker.add(child.pid!);
  const exited = once(child, 'exit');
  const killed = tracker.killAll();
  assert.deepEqual([...killed].sort(), [...below, child.pid!].sort());
  const [, signal] = await exited;
  assert.equal(signal, 'SIGKILL');
  await new Promise((resolve) => setTimeout(resolve, 100));
  for (const pid of below) assert.ok(isGoneOrZombie(pid), `grandchild ${pid} is gone`);
});

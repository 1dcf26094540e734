import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { processTree } from '@hearth/agent-kit/process-tree';
import { ChildTracker } from './child-processes.ts';

/** Killed grandchildren are reparented and may stay zombies until their new parent reaps them. */
function isGoneOrZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

test('kills a tracked child with everything below it, and nothing of a child it forgot', async (t) => {
  const child = spawn('sh', ['-c', 'sleep 30 & sleep 30 & wait'], { stdio: 'ignore' });
  const other = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.after(() => other.kill('SIGKILL'));
  let below = processTree(child.pid!).slice(1);
  for (let tries = 0; below.length < 2 && tries < 100; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    below = processTree(child.pid!).slice(1);
  }
  assert.equal(below.length, 2, `two sleeps below ${child.pid}: ${below.join(' ')}`);
  const tracker = new ChildTracker();
  tracker.add(child.pid!);
  tracker.add(other.pid!);
  tracker.forget(other.pid!);
  const exited = once(child, 'exit');
  const killed = tracker.killAll();
  assert.deepEqual([...killed].sort(), [...below, child.pid!].sort());
  const [, signal] = await exited;
  assert.equal(signal, 'SIGKILL');
  await new Promise((resolve) => setTimeout(resolve, 100));
  for (const pid of below) assert.ok(isGoneOrZombie(pid), `grandchild ${pid} is gone`);
  assert.equal(other.exitCode ?? other.signalCode, null, 'the forgotten child still runs');
});

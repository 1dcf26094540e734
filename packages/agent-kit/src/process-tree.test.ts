import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { processTree, signalAll } from './process-tree.ts';

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

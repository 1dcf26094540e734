import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskHealth, type TaskNotice } from './task-health.ts';

const full = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
const down = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

test('task health: one line when failing starts, a reminder every 5 min with a count, one when the reason changes, one on recovery', () => {
  let now = 0;
  const lines: TaskNotice[] = [];
  const health = new TaskHealth(
    'deadline sweeper',
    (notice) => lines.push(notice as TaskNotice),
    300_000,
    () => now,
  );
  health.succeeded();
  assert.equal(lines.length, 0, 'a working task logs nothing');
  for (; now < 299_000; now += 1000) health.failed(full);
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!.level, 'error');
  assert.equal(lines[0]!.fields.code, 'ERR_STORE_FULL');
  assert.match(lines[0]!.message, /^deadline sweeper is failing \(ERR_STORE_FULL: database or disk is full\): free space on the disk/);
  now = 300_000;
  health.failed(full);
  assert.equal(lines.length, 2);
  assert.match(lines[1]!.message, /still failing .*: 300 failed runs in 5 min/);
  health.failed(down);
  assert.equal(lines.length, 3, 'a new reason is logged at once');
  assert.equal(lines[2]!.fields.code, 'ERR_STORE_UNAVAILABLE');
  now = 330_000;
  health.succeeded();
  health.succeeded();
  assert.equal(lines.length, 4);
  assert.equal(lines[3]!.level, 'info');
  assert.equal(lines[3]!.message, 'deadline sweeper works again, after 301 failed runs in 330 s');
  assert.equal(health.consecutiveFailures, 0);
});

test('task health: an unexpected error is ERR_INTERNAL and carries the error (its stack) in the line', () => {
  const lines: TaskNotice[] = [];
  const bug = new TypeError('x is undefined');
  new TaskHealth('alarm evaluator', (notice) => lines.push(notice as TaskNotice)).failed(bug);
  assert.equal(lines[0]!.fields.code, 'ERR_INTERNAL');
  assert.equal(lines[0]!.fields.err, bug);
});

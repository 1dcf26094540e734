import { test } from 'node:test';
import assert from 'node:assert/strict';
import { linkSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeploymentMarkers } from './markers.ts';

// The next run reads the hook record to stop a hook left by a heat-config that died; a record rewritten
// in place could be read half-written (or left so by a kill mid-write). A file that is replaced keeps its
// old content for a reader that opened it before: here a hard link stands for such a reader.
test('the hook record is replaced whole, never rewritten in place, and names the live process', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'markers-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const markers = new DeploymentMarkers(dir, 'd1');
  const old = JSON.stringify({ pid: 1, startTime: 'earlier' });
  writeFileSync(markers.hookPath, old);
  const reader = join(dir, 'reader');
  linkSync(markers.hookPath, reader);

  markers.recordHook(process.pid);

  assert.equal(readFileSync(reader, 'utf8'), old, 'the old file was not written into');
  assert.equal((JSON.parse(readFileSync(markers.hookPath, 'utf8')) as { pid: number }).pid, process.pid);
  assert.equal(markers.liveHook(), process.pid);
  assert.deepEqual(readdirSync(dir).sort(), ['.d1.hook', 'reader'], 'no temp file is left');
});

test('a hook that has exited is not recorded, and a damaged record names no process', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'markers-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const markers = new DeploymentMarkers(dir, 'd2');
  markers.recordHook(2 ** 22 + 1); // above Linux's largest pid: no such process
  assert.deepEqual(readdirSync(dir), []);
  writeFileSync(markers.hookPath, '{"pid": 12');
  assert.equal(markers.liveHook(), undefined);
});

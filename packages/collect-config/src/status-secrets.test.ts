// The status file is world-readable (operators and monitoring read it), so it must not repeat the
// command, whose text may carry a secret (`-c 'curl -u admin:s3cret ...'`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './test-support/fixtures.ts';

const BIN = new URL('../bin/os-collect-config.js', import.meta.url).pathname;

test("the status file (0644) keeps the command's outcome but never its text", () => {
  const root = tempDir();
  const data = join(root, 'data');
  mkdirSync(data, { mode: 0o755 });
  writeFileSync(join(data, 'cfg'), '{"a": 1}');
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, HEARTH_ROOT: root };
  const command = 'SECRET=hunter2-not-for-status; exit 3';
  const args = ['--one-time', '-c', command, '--local-path', data, 'local'];
  const ran = spawnSync(process.execPath, [BIN, ...args], { env, encoding: 'utf8', timeout: 30_000 });
  assert.equal(ran.status, 3, ran.stderr);
  const status = spawnSync(process.execPath, [BIN, '--status', '--json'], { env, encoding: 'utf8', timeout: 30_000 });
  assert.equal(status.status, 0, status.stderr);
  const parsed = JSON.parse(status.stdout) as { lastCommand: Record<string, unknown> };
  assert.equal(parsed.lastCommand.exitCode, 3);
  assert.equal(parsed.lastCommand.ok, false);
  assert.equal('command' in parsed.lastCommand, false);
  const file = join(root, 'var/lib/hearth/os-collect-config.status.json');
  assert.equal(statSync(file).mode & 0o777, 0o644);
  assert.doesNotMatch(readFileSync(file, 'utf8'), /hunter2/);
});

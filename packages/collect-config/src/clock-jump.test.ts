// A wall clock stepped (NTP correcting a VM that booted ahead): durations stay true, and the daemon as a
// process under libfaketime keeps polling. That one needs the `faketime` package; skipped with a message without it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectPass } from './collect-pass.ts';
import { runCommand } from './run-command.ts';
import { contextFor, optionsFor, tempDir } from './test-support/fixtures.ts';
import { faketimeSkip, steppedClockEnv } from '../../../test/helpers/faketime.ts';

const TWO_YEARS_MS = 2 * 365 * 24 * 3600_000;

test('the command and collector durations are true when the wall clock steps back meanwhile', async (t) => {
  const realNow = Date.now;
  t.after(() => (Date.now = realNow));
  const stepBack = setTimeout(() => (Date.now = () => realNow() - TWO_YEARS_MS), 50);
  const result = await runCommand('sleep 0.3', []);
  clearTimeout(stepBack);
  Date.now = realNow;
  assert.ok(result.durationMs >= 250 && result.durationMs < 10_000, `durationMs ${result.durationMs}`);

  const slow = {
    name: 'slow',
    async collect() {
      await new Promise((resolve) => setTimeout(resolve, 100));
      Date.now = () => realNow() - TWO_YEARS_MS;
      return { kind: 'data' as const, outputs: [['slow', { a: 1 }] as [string, unknown]] };
    },
  };
  const pass = await collectPass([slow], contextFor(optionsFor(['--one-time', 'local'])), undefined, new Map());
  Date.now = realNow;
  const duration = pass.statuses[0]!.durationMs;
  assert.ok(duration >= 90 && duration < 10_000, `durationMs ${duration}`);
});

const BIN = new URL('../bin/os-collect-config.js', import.meta.url).pathname;

test('a backward clock jump does not stall the polling loop', { skip: faketimeSkip() }, async (t) => {
  const root = tempDir();
  const data = join(root, 'data');
  mkdirSync(data, { mode: 0o755 });
  writeFileSync(join(data, 'cfg'), '{"a": 1}');
  const clock = join(root, 'faketime');
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, HEARTH_ROOT: root, ...steppedClockEnv(clock) };
  const args = ['--polling-interval', '0.2', '--min-polling-interval', '0.2', '-c', 'true', '--local-path', data, 'local'];
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const sleeps = (): number => stderr.split('\n').filter((line) => line.includes('Sleeping')).length;
  const until = async (condition: () => boolean, ms: number): Promise<boolean> => {
    for (const end = performance.now() + ms; performance.now() < end;) {
      if (condition()) return true;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return condition();
  };
  assert.ok(await until(() => sleeps() >= 2, 20_000), `the daemon never slept:\n${stderr}`);
  writeFileSync(clock, '-2y\n');
  const before = sleeps();
  assert.ok(await until(() => sleeps() >= before + 3, 5_000), `no pass after the clock went back 2 years:\n${stderr.slice(-2000)}`);
  assert.match(stderr, /"time":"\d{4}/, 'still logging');
});

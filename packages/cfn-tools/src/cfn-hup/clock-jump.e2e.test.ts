// cfn-hup as a real process under libfaketime, its wall clock stepped while it runs (NTP correcting a
// VM that booted with a wrong clock): passes go on at the interval. Needs the `faketime` package;
// skipped with a message without it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startFakeCfnApi } from '../shared/fake-cfn-api.ts';
import { binEnv, binPath } from '../shared/run-bin.ts';
import { faketimeSkip, steppedClockEnv } from '../../../../test/helpers/faketime.ts';

async function until(condition: () => boolean, ms: number): Promise<boolean> {
  for (const end = performance.now() + ms; performance.now() < end;) {
    if (condition()) return true;
    await sleep(25);
  }
  return condition();
}

for (const [jump, intervalSeconds] of [
  ['-2y', 1],
  ['-3h', 3],
  ['+2y', 7],
] as const) {
  test(
    `a ${jump} clock jump neither stalls the ${intervalSeconds} s interval nor runs missed passes`,
    { skip: faketimeSkip() },
    async (t) => {
      const api = await startFakeCfnApi();
      t.after(() => api.close());
      api.setMetadata('web', 'Server', { 'AWS::CloudFormation::Init': {} });
      const root = mkdtempSync(join(tmpdir(), 'cfn-hup-clock-'));
      mkdirSync(join(root, 'etc/cfn/hooks.d'), { recursive: true });
      writeFileSync(join(root, 'etc/cfn/cfn-credentials'), `AWSAccessKeyId=${api.accessKeyId}\nAWSSecretKey=${api.secretKey}\n`);
      writeFileSync(
        join(root, 'etc/cfn/cfn-hup.conf'),
        `[main]\nstack = web\ncredential-file = ${join(root, 'etc/cfn/cfn-credentials')}\nurl = ${api.url}\n`,
      );
      writeFileSync(join(root, 'etc/cfn/hooks.d/h.conf'), '[h]\ntriggers = post.update\npath = Resources.Server.Metadata\naction = true\n');
      const clock = join(root, 'faketime');
      const env = binEnv({ HEARTH_ROOT: root, ...steppedClockEnv(clock) });
      const child = spawn(process.execPath, [binPath('cfn-hup'), '--interval-seconds', String(intervalSeconds), '-v'], {
        env,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      t.after(() => child.kill('SIGKILL'));
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const polls = (): number => api.requests.length;

      // A node process may take seconds to start on a loaded machine: this deadline is for that.
      assert.ok(await until(() => polls() >= 2, 30_000), `no second pass:\n${stderr}`);
      writeFileSync(clock, `${jump}\n`);
      const jumpedAt = performance.now();
      const jumpedPolls = polls();
      assert.ok(
        await until(() => polls() >= jumpedPolls + 2, intervalSeconds * 3000 + 3000),
        `no pass within ${intervalSeconds * 3 + 3} s of the clock jump:\n${stderr.slice(-2000)}`,
      );
      const elapsedS = (performance.now() - jumpedAt) / 1000;
      // at most one pass per interval elapsed (plus the one in flight): a forward jump runs no backlog
      assert.ok(polls() - jumpedPolls <= elapsedS / intervalSeconds + 2, `${polls() - jumpedPolls} passes in ${elapsedS} s`);
      assert.equal(child.exitCode, null, `cfn-hup exited:\n${stderr}`);
    },
  );
}

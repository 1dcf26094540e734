// cfn-push-stats --schedule as a real process under libfaketime, its wall clock stepped while it runs (NTP
// correcting a VM that booted with a wrong clock): pushes go on every second, without a stall after a step
// back or a burst of missed ticks after a step forward. Needs the `faketime` package; skipped without it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { binEnv, binPath } from '../shared/run-bin.ts';
import { faketimeSkip, steppedClockEnv } from '../../../../test/helpers/faketime.ts';

async function until(condition: () => boolean, ms: number): Promise<boolean> {
  for (const end = performance.now() + ms; performance.now() < end;) {
    if (condition()) return true;
    await sleep(25);
  }
  return condition();
}

for (const jump of ['-2y', '-3h', '+2y'] as const) {
  test(`a ${jump} clock jump neither stalls a one-second --schedule nor pushes the missed ticks`, { skip: faketimeSkip() }, async (t) => {
    const pushes: number[] = [];
    // Counts the PutMetricData calls; the signature is another test's business.
    const server = createServer((request, response) => {
      request.resume().on('end', () => {
        pushes.push(performance.now());
        response.writeHead(200).end('<PutMetricDataResponse/>');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => {
      server.closeAllConnections();
      server.close();
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
    const root = mkdtempSync(join(tmpdir(), 'cfn-push-stats-clock-'));
    const clock = join(root, 'faketime');
    const child = spawn(
      process.execPath,
      [binPath('cfn-push-stats'), '--access-key', 'AK', '--secret-key', 'SK', '--url', url, '--heartbeat', '--schedule', '* * * * * *'],
      { env: binEnv({ HEARTH_ROOT: root, ...steppedClockEnv(clock) }), stdio: ['ignore', 'ignore', 'pipe'] },
    );
    t.after(() => child.kill('SIGKILL'));
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));

    // A node process may take seconds to start on a loaded machine: this deadline is for that.
    assert.ok(await until(() => pushes.length >= 2, 30_000), `no second push:\n${stderr}`);
    writeFileSync(clock, `${jump}\n`);
    const jumpedAt = performance.now();
    const before = pushes.length;
    // A stall would last the length of the step (years, or hours); 20 s is for a loaded machine, where a
    // one-second push can take seconds to start (6 s failed once in CI with the load average at 16).
    assert.ok(await until(() => pushes.length >= before + 2, 20_000), `no push within 20 s of the clock jump:\n${stderr.slice(-2000)}`);
    await sleep(1000);
    const elapsedS = (performance.now() - jumpedAt) / 1000;
    // At most one push per second elapsed (plus the one in flight): a forward jump pushes no backlog.
    assert.ok(pushes.length - before <= elapsedS + 2, `${pushes.length - before} pushes in ${elapsedS} s`);
    assert.equal(child.exitCode, null, `cfn-push-stats exited:\n${stderr}`);
  });
}

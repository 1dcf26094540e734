// heat-config-notify as a real process on a VM whose wall clock is days ahead of the server's (booted
// with a wrong clock, before NTP): a signal whose first attempt failed is kept and delivered later, not
// dropped because the server's deadline looks long past. Needs the `faketime` package; skipped without it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { faketimeSkip, steppedClockEnv } from '../../../test/helpers/faketime.ts';
import { deploymentWith, runNotify, startFake } from './test-support.ts';

test(
  'a VM clock 2 days ahead: a signal tried once while the server was down is delivered by the next drain',
  { skip: faketimeSkip() },
  async (t) => {
    let up = false;
    const fake = await startFake(() => (up ? { status: 200, body: '{"status":"COMPLETE"}' } : { status: 503 }));
    t.after(() => fake.close());
    const root = mkdtempSync(join(tmpdir(), 'hcn-clock-ahead-'));
    const deployment = join(root, 'c1.json');
    // creation_time from the server's clock (this one); a 60 s timeout: by the VM's clock the deadline passed 2 days ago.
    writeFileSync(
      deployment,
      JSON.stringify(
        deploymentWith({
          deploy_signal_transport: 'HEARTH_SIGNAL',
          deploy_signal_id: `${fake.url}/v1/guest/deployments/d1/signal?token=capability-token`,
          deploy_signal_verb: 'POST',
          deploy_timeout: 60,
        }),
      ),
    );
    const outbox = join(root, 'outbox');
    const clock = join(root, 'faketime');
    const env = {
      ...process.env,
      ...steppedClockEnv(clock),
      HEARTH_OUTBOX_DIR: outbox,
      HEARTH_NOTIFY_RETRY_BASE_MS: '10',
      HEARTH_NOTIFY_RETRY_CAP_MS: '20',
    };
    writeFileSync(clock, '+2d\n');

    const queued = await runNotify([deployment], env, '{"deploy_status_code":0}');
    assert.equal(queued.code, 0, queued.stderr);
    assert.equal(fake.requests.length, 1, 'one attempt, refused with a 503');
    assert.equal(readdirSync(outbox).filter((name) => name.endsWith('.json')).length, 1, 'queued');

    up = true;
    const drained = await runNotify(['--drain'], env, '');
    assert.equal(drained.code, 0, drained.stderr);
    assert.equal(fake.requests.length, 2, `delivered by the drain, not dropped:\n${drained.stderr}`);
    assert.deepEqual(
      readdirSync(outbox).filter((name) => name.endsWith('.json')),
      [],
    );
  },
);

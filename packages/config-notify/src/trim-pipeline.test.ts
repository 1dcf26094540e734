// The real pipeline for a talkative script: the script hook (a process) keeps the end of 5 MB of stdout and 3 MB
// of stderr behind its own marker, heat-config-notify (the bin, a process) cuts further to fit 1 MiB, and what a
// loopback server receives carries one marker per stream counting everything cut, in the hook's unit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runHookExecutable, sampleDeployment } from '../../../hooks/_lib/testing.ts';
import { deploymentWith, runNotify, startFake } from './test-support.ts';

const HOOK = new URL('../../../hooks/script/script', import.meta.url).pathname;

const notify = runNotify;

test(
  '5 MB of stdout and 3 MB of stderr through the script hook and heat-config-notify: one marker each, counting every character cut',
  { timeout: 120_000 },
  async () => {
    const root = mkdtempSync(join(tmpdir(), 'hcn-trim-pipeline-'));
    const fake = await startFake(() => ({ status: 200, body: '{"status":"COMPLETE","duplicate":false}' }));
    try {
      // Each stream: a first line, then "é\n" lines (3 bytes, 2 characters), then a last line; lengths known exactly.
      const streams = { stdout: { lines: 5_000_000 / 3, last: 'LAST OUT' }, stderr: { lines: 3_000_000 / 3, last: 'LAST ERR' } };
      const script =
        '#!/bin/sh\n' +
        `awk 'BEGIN { print "FIRST OUT"; for (i = 0; i < ${Math.floor(streams.stdout.lines)}; i++) print "é"; printf "LAST OUT" }'\n` +
        `awk 'BEGIN { print "FIRST ERR"; for (i = 0; i < ${Math.floor(streams.stderr.lines)}; i++) print "é"; printf "LAST ERR" }' >&2\n` +
        'exit 4\n';
      const written = {
        stdout: 'FIRST OUT\n'.length + Math.floor(streams.stdout.lines) * 2 + 'LAST OUT'.length,
        stderr: 'FIRST ERR\n'.length + Math.floor(streams.stderr.lines) * 2 + 'LAST ERR'.length,
      };
      const hook = await runHookExecutable(HOOK, sampleDeployment({ config: script }), { env: { HEARTH_ROOT: root }, timeoutMs: 60_000 });
      assert.equal(hook.exitCode, 0, hook.stderr.slice(-2000));
      assert.match(String(hook.result?.deploy_stdout), /^\[hook: the first \d+ characters of the tool's stdout were cut\]\n/);

      const deployment = join(root, 'deployment.json');
      writeFileSync(
        deployment,
        JSON.stringify(
          deploymentWith({
            deploy_signal_transport: 'HEARTH_SIGNAL',
            deploy_signal_id: `${fake.url}/v1/guest/deployments/d1/signal?token=t`,
            deploy_signal_verb: 'POST',
          }),
        ),
      );
      const run = await notify([deployment], { ...process.env, HEARTH_OUTBOX_DIR: join(root, 'outbox') }, hook.stdout);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(fake.requests.length, 1);
      const body = fake.requests[0]!.body;
      assert.ok(body.length <= 1024 * 1024, `${body.length} bytes`);
      const sent = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
      assert.equal(sent.deploy_status_code, 4);
      for (const stream of ['stdout', 'stderr'] as const) {
        const value = sent[`deploy_${stream}`] as string;
        assert.doesNotMatch(value, /\[hook:/, `${stream}: the hook's marker is replaced, not left cut in half`);
        const marker =
          /^\[heat-config-notify: the first (\d+) characters were cut to fit the signal size limit \((\d+) of them earlier\)\]\n/.exec(
            value,
          );
        assert.ok(marker, `${stream}: ${value.slice(0, 200)}`);
        const kept = value.slice(marker[0].length);
        assert.ok(kept.endsWith(streams[stream].last), `${stream}: ${JSON.stringify(kept.slice(-40))}`);
        // é is one character: every character written is either counted in the marker or kept.
        assert.equal(Number(marker[1]) + kept.length, written[stream], `${stream}: the marker counts every character cut`);
        assert.ok(Number(marker[2]) < Number(marker[1]), stream);
      }
    } finally {
      await fake.close();
      rmSync(root, { recursive: true, force: true });
    }
  },
);

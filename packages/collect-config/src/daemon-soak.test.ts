// The daemon runs for months: what one pass takes from the process must be given back, so that
// nothing held grows with the number of passes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { httpRequest } from '@hearth/agent-kit';
import type { Collector } from './collectors/types.ts';
import { runCollectConfig } from './daemon.ts';
import { optionsFor, recordingLogger } from './test-support/fixtures.ts';
import { dependantsOf } from '../../../test/helpers/abort-signal.ts';

/** Whether this Node keeps such a set, so that the test can see one grow. */
function dependantsVisible(): boolean {
  const probe = new AbortController().signal;
  AbortSignal.any([probe]);
  return dependantsOf(probe) === 1;
}

test('the run signal tracks nothing per sleep: a daemon that sleeps 400 times holds no more than after 20', async (t) => {
  const options = optionsFor(['-c', 'true', '--min-polling-interval', '0.001', '--polling-interval', '0.001', 'local']);
  const stop = new AbortController();
  const seen: number[] = [];
  let runSignal: AbortSignal | undefined;
  const counting: Collector = {
    name: 'counting',
    collect(ctx) {
      runSignal = ctx.signal;
      seen.push(dependantsOf(ctx.signal!) ?? 0);
      if (seen.length >= 400) stop.abort();
      return Promise.resolve({ kind: 'data', outputs: [['counting', { fixed: true }]] });
    },
  };
  if (!dependantsVisible()) return t.skip('this Node keeps no dependant-signal set to look at');
  const outcome = await runCollectConfig(options, {
    http: httpRequest,
    log: recordingLogger(),
    runCommand: (command) => Promise.resolve({ command, exitCode: 0, signal: null, startedAt: new Date().toISOString(), durationMs: 0 }),
    collectors: [counting],
    stop: stop.signal,
  });
  assert.equal(outcome.exitCode, 0);
  assert.equal(seen.length, 400, 'the loop made its 400 passes with the real sleep');
  assert.ok(runSignal !== undefined);
  assert.ok(seen[399]! <= seen[19]!, `entries on the run signal grew from ${seen[19]} (pass 20) to ${seen[399]} (pass 400)`);
});

test('a stop during a pass ends the loop at once, not after the polling interval', async () => {
  const options = optionsFor(['-c', 'true', '--min-polling-interval', '600', '--polling-interval', '600', 'local']);
  const stop = new AbortController();
  const stopping: Collector = {
    name: 'stopping',
    collect() {
      stop.abort(); // the stop lands while the pass runs, before the loop's sleep starts
      return Promise.resolve({ kind: 'data', outputs: [['stopping', { fixed: true }]] });
    },
  };
  const started = Date.now();
  const outcome = await runCollectConfig(options, {
    http: httpRequest,
    log: recordingLogger(),
    runCommand: (command) => Promise.resolve({ command, exitCode: 0, signal: null, startedAt: new Date().toISOString(), durationMs: 0 }),
    collectors: [stopping],
    stop: stop.signal,
  });
  assert.deepEqual(outcome, { exitCode: 0, reexec: false });
  assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
});

// Pruning the state of deployments gone from the list: real heat-config runs on a temp deployed dir.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processStartTime } from './markers.ts';
import { ABSENT_RECORD_NAME, PRUNE_MAX_PER_RUN, stateFileOwner } from './prune.ts';
import { deployment, logRecords, runBin, waitFor, world, type World } from './test-support.ts';

const LONG_AGO = '2000-01-01T00:00:00.000Z';
const SECRET = 'deploy-password-never-logged';

/** A world whose hook counts its runs in `<root>/runs`, with its outbox in the temp root. */
function pruneWorld(t: Parameters<typeof world>[0]): World & { runs(): number; outboxDir: string } {
  const w = world(t);
  const outboxDir = join(w.root, 'outbox');
  w.env.HEARTH_OUTBOX_DIR = outboxDir;
  w.hook('script', `echo run >> "${w.root}/runs"; echo '{"deploy_status_code": 0}'`);
  const runs = () => (existsSync(join(w.root, 'runs')) ? readFileSync(join(w.root, 'runs'), 'utf8').split('\n').length - 1 : 0);
  return Object.assign(w, { runs, outboxDir });
}

function withSecret(id: string): Record<string, unknown> {
  return deployment(id, 'script', {
    inputs: [
      { name: 'deploy_action', type: 'String', value: 'CREATE' },
      { name: 'deploy_signal_transport', type: 'String', value: 'NO_SIGNAL' },
      { name: 'deploy_password', type: 'String', value: SECRET },
    ],
  });
}

function files(w: World): string[] {
  return readdirSync(w.deployedDir)
    .filter((name) => !name.startsWith('.'))
    .sort();
}

function recordPath(w: World): string {
  return join(w.deployedDir, ABSENT_RECORD_NAME);
}

function record(w: World): Record<string, string> {
  return (JSON.parse(readFileSync(recordPath(w), 'utf8')) as { absentSince: Record<string, string> }).absentSince;
}

function setRecord(w: World, absentSince: Record<string, string>): void {
  writeFileSync(recordPath(w), JSON.stringify({ version: 1, absentSince }));
}

function pruned(stderr: string): unknown[] {
  return logRecords(stderr)
    .filter((r) => String(r.msg).startsWith('Pruned the state of '))
    .map((r) => r.id);
}

test('a deployment missing from the list keeps its files for the prune age, then they go (one log line, no secrets)', async (t) => {
  const w = pruneWorld(t);
  w.deployments([withSecret('a1'), withSecret('b1')]);
  assert.equal((await runBin([], w.env)).code, 0);
  assert.deepEqual(files(w), ['a1.json', 'a1.notify.json', 'b1.json', 'b1.notify.json']);

  w.deployments([withSecret('b1')]);
  const started = Date.now();
  const missing = await runBin([], w.env);
  assert.equal(missing.code, 0, missing.stderr);
  assert.deepEqual(files(w), ['a1.json', 'a1.notify.json', 'b1.json', 'b1.notify.json'], 'missing for less than 7 days: kept');
  assert.deepEqual(Object.keys(record(w)), ['a1']);
  assert.ok(Date.parse(record(w).a1!) >= started - 1000);

  setRecord(w, { a1: LONG_AGO });
  const due = await runBin([], w.env);
  assert.equal(due.code, 0, due.stderr);
  assert.deepEqual(files(w), ['b1.json', 'b1.notify.json']);
  assert.deepEqual(pruned(due.stderr), ['a1']);
  assert.ok(!due.stderr.includes(SECRET), 'file contents are never logged');
  assert.deepEqual(record(w), {});
  assert.equal(w.runs(), 2, 'b1 was never run again');
});

test('--prune-after (and HEAT_CONFIG_PRUNE_AFTER) sets the age; 0 never prunes and writes no record', async (t) => {
  const w = pruneWorld(t);
  w.deployments([deployment('c1', 'script')]);
  assert.equal((await runBin([], w.env)).code, 0);
  w.deployments([]);
  assert.equal((await runBin(['--prune-after', '0'], { ...w.env, HEAT_CONFIG_PRUNE_AFTER: '1' })).code, 0);
  assert.ok(!existsSync(recordPath(w)), 'the flag wins; 0 tracks nothing');
  assert.deepEqual(files(w), ['c1.json', 'c1.notify.json']);

  const first = await runBin([], { ...w.env, HEAT_CONFIG_PRUNE_AFTER: '1' });
  assert.equal(first.code, 0);
  assert.deepEqual(files(w), ['c1.json', 'c1.notify.json'], 'just seen missing: kept');
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const later = await runBin([], { ...w.env, HEAT_CONFIG_PRUNE_AFTER: '1' });
  assert.equal(later.code, 0);
  assert.deepEqual(files(w), []);
  assert.deepEqual(pruned(later.stderr), ['c1']);
});

test('an id back in the list leaves the record, is never pruned and never run again', async (t) => {
  const w = pruneWorld(t);
  w.deployments([deployment('d1', 'script')]);
  assert.equal((await runBin([], w.env)).code, 0);
  w.deployments([]);
  assert.equal((await runBin([], w.env)).code, 0);
  assert.deepEqual(Object.keys(record(w)), ['d1']);

  setRecord(w, { d1: LONG_AGO });
  w.deployments([deployment('d1', 'script')]);
  const back = await runBin(['--prune-after', '1'], w.env);
  assert.equal(back.code, 0, back.stderr);
  assert.deepEqual(pruned(back.stderr), []);
  assert.deepEqual(files(w), ['d1.json', 'd1.notify.json']);
  assert.deepEqual(record(w), {}, 'listed again: dropped from the record');
  assert.equal(w.runs(), 1);
  assert.equal(w.notified().length, 1);

  // Missing once more: counted from now, not from the old time.
  w.deployments([]);
  assert.equal((await runBin(['--prune-after', '3600'], w.env)).code, 0);
  assert.deepEqual(files(w), ['d1.json', 'd1.notify.json']);
  assert.ok(Date.now() - Date.parse(record(w).d1!) < 60_000);
});

test('one run with an empty (or partial) list removes nothing, and nothing runs again afterwards', async (t) => {
  const w = pruneWorld(t);
  const list = [deployment('e1', 'script'), deployment('e2', 'script'), deployment('e3', 'script')];
  w.deployments(list);
  assert.equal((await runBin([], w.env)).code, 0);
  w.deployments([]);
  assert.equal((await runBin([], w.env)).code, 0);
  w.deployments([list[0]]);
  assert.equal((await runBin([], w.env)).code, 0);
  assert.equal(files(w).length, 6);
  w.deployments(list);
  const back = await runBin([], w.env);
  assert.equal(back.code, 0);
  assert.equal(w.runs(), 3, 'no deployment ran twice');
  assert.equal(w.notified().length, 3);
  assert.deepEqual(record(w), {});
});

test('a damaged record: no crash, nothing pruned, every missing id counts from now', async (t) => {
  const w = pruneWorld(t);
  w.deployments([deployment('f1', 'script'), deployment('f2', 'script')]);
  assert.equal((await runBin([], w.env)).code, 0);
  w.deployments([]);
  for (const damage of ['{"version": 1, "absentSi', 'null', '[]', '{"version": 1, "absentSince": {"f1": "long ago", "f2": 5}}']) {
    writeFileSync(recordPath(w), damage);
    const run = await runBin(['--prune-after', '60'], w.env);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(pruned(run.stderr), [], damage);
    assert.equal(files(w).length, 4, damage);
    const since = record(w);
    assert.deepEqual(Object.keys(since), ['f1', 'f2'], damage);
    assert.ok(
      Object.values(since).every((time) => Date.now() - Date.parse(time) < 60_000),
      damage,
    );
  }
  // Not even a file: unreadable and unwritable, the run still succeeds and removes nothing.
  rmSync(recordPath(w));
  mkdirSync(recordPath(w));
  const run = await runBin(['--prune-after', '1'], w.env);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(files(w).length, 4);
  assert.ok(logRecords(run.stderr).some((r) => r.level === 'warn' && String(r.msg).includes('is damaged')));
});

test('a running marker, an unsent result, a live hook or a queued signal keeps an id that is due', async (t) => {
  const w = pruneWorld(t);
  w.deployments([deployment('pending', 'script')]);
  assert.equal((await runBin([], { ...w.env, FAKE_NOTIFY_EXIT: '75' })).code, 1);
  assert.deepEqual(files(w), ['pending.notify.json', 'pending.running'], 'a result heat-config-notify did not take');
  writeFileSync(join(w.deployedDir, 'interrupted.running'), '{}');
  writeFileSync(join(w.deployedDir, 'hooked.json'), '{}');
  const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.after(() => sleeper.kill('SIGKILL'));
  await waitFor(() => processStartTime(sleeper.pid!) !== undefined);
  writeFileSync(join(w.deployedDir, '.hooked.hook'), JSON.stringify({ pid: sleeper.pid, startTime: processStartTime(sleeper.pid!) }));
  writeFileSync(join(w.deployedDir, 'queued.json'), '{}');
  writeFileSync(join(w.deployedDir, 'queued.notify.json'), '{}');
  mkdirSync(w.outboxDir, { recursive: true });
  writeFileSync(join(w.outboxDir, 'a'.repeat(40) + '.json'), JSON.stringify({ version: 1, deploymentId: 'queued' }));
  writeFileSync(join(w.outboxDir, 'b'.repeat(40) + '.json'), '{damaged');
  writeFileSync(join(w.deployedDir, 'gone.json'), '{}');
  w.deployments([]);
  setRecord(w, { pending: LONG_AGO, interrupted: LONG_AGO, hooked: LONG_AGO, queued: LONG_AGO, gone: LONG_AGO });

  const run = await runBin([], w.env);
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(pruned(run.stderr), ['gone'], 'only the id nothing holds');
  assert.deepEqual(files(w), [
    'hooked.json',
    'interrupted.running',
    'pending.notify.json',
    'pending.running',
    'queued.json',
    'queued.notify.json',
  ]);
  assert.ok(existsSync(join(w.deployedDir, '.hooked.hook')));
  assert.deepEqual(Object.keys(record(w)).sort(), ['hooked', 'interrupted', 'pending', 'queued'], 'their times are kept');

  // Once the hook ended and the signal was delivered, they go.
  sleeper.kill('SIGKILL');
  await waitFor(() => processStartTime(sleeper.pid!) === undefined);
  rmSync(join(w.outboxDir, 'a'.repeat(40) + '.json'));
  const after = await runBin([], w.env);
  assert.equal(after.code, 0, after.stderr);
  assert.deepEqual(pruned(after.stderr), ['hooked', 'queued']);
  assert.deepEqual(files(w), ['interrupted.running', 'pending.notify.json', 'pending.running']);
  assert.ok(!existsSync(join(w.deployedDir, '.hooked.hook')));
  assert.equal(w.runs(), 1);
});

test('pruning is bounded per run, oldest first; the next run goes on', async (t) => {
  const w = pruneWorld(t);
  mkdirSync(w.deployedDir, { recursive: true });
  const since: Record<string, string> = {};
  for (let n = 0; n < PRUNE_MAX_PER_RUN + 5; n += 1) {
    const id = `old-${String(n).padStart(4, '0')}`;
    writeFileSync(join(w.deployedDir, `${id}.json`), '{}');
    since[id] = new Date(Date.UTC(2001, 0, 1) + (PRUNE_MAX_PER_RUN + 5 - n) * 1000).toISOString();
  }
  setRecord(w, since);
  w.deployments([]);
  const first = await runBin([], w.env);
  assert.equal(first.code, 0);
  assert.equal(pruned(first.stderr).length, PRUNE_MAX_PER_RUN);
  assert.deepEqual(
    files(w),
    ['old-0000.json', 'old-0001.json', 'old-0002.json', 'old-0003.json', 'old-0004.json'],
    'the oldest went first',
  );
  const second = await runBin([], w.env);
  assert.equal(pruned(second.stderr).length, 5);
  assert.deepEqual(files(w), []);
});

test("x.notify.json is both x's result and the marker of an id x.notify: kept while either is kept", async (t) => {
  const w = pruneWorld(t);
  w.deployments([deployment('x.notify', 'script')]);
  assert.equal((await runBin([], w.env)).code, 0);
  assert.deepEqual(files(w), ['x.notify.json', 'x.notify.notify.json']);
  setRecord(w, { x: LONG_AGO });
  const stillListed = await runBin(['--prune-after', '1'], w.env);
  assert.equal(stillListed.code, 0);
  assert.deepEqual(pruned(stillListed.stderr), []);
  assert.deepEqual(files(w), ['x.notify.json', 'x.notify.notify.json'], 'x.notify is listed: its marker stays');
  assert.deepEqual(record(w), {}, 'x has no file of its own');

  // x.notify missing for less than the age, x (and x.notify.notify) for longer: x.notify's files stay.
  w.deployments([]);
  writeFileSync(join(w.deployedDir, 'x.json'), '{}');
  assert.equal((await runBin([], w.env)).code, 0);
  setRecord(w, { ...record(w), x: LONG_AGO, 'x.notify.notify': LONG_AGO });
  const partly = await runBin(['--prune-after', '3600'], w.env);
  assert.equal(partly.code, 0, partly.stderr);
  assert.deepEqual(pruned(partly.stderr), ['x']);
  assert.deepEqual(files(w), ['x.notify.json', 'x.notify.notify.json'], "only x.json went: the rest is x.notify's");
  assert.equal(w.runs(), 1);

  const listed = new Set(['z.notify']);
  assert.deepEqual(
    [
      'x.notify.json',
      'z.notify.json',
      'x.running',
      '.x.hook',
      '.heat-config.absent.json',
      '.heat-config.lock',
      '.x.json.123.0123456789ab.tmp',
    ].map((name) => stateFileOwner(name, listed)),
    ['x', 'z.notify', 'x', 'x', undefined, undefined, undefined],
  );
});

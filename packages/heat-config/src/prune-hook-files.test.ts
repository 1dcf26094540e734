// Pruning also removes what a deployment's hook kept in its working dir: Heat's script hook writes a copy of
// the script for every derived config (a fresh id on every action), so without this a VM whose deployment
// is updated hourly gains a copy of its script every hour, for life. Real heat-config, real script hook.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ABSENT_RECORD_NAME } from './prune.ts';
import { deployment, runBin, world, type World } from './test-support.ts';

const SCRIPT_HOOK = new URL('../../../hooks/script/script', import.meta.url).pathname;

function scriptWorld(t: Parameters<typeof world>[0]): World & { working: string } {
  const w = world(t);
  w.env.HEARTH_OUTBOX_DIR = join(w.root, 'outbox');
  symlinkSync(SCRIPT_HOOK, join(w.hooksDir, 'script'));
  return Object.assign(w, { working: join(w.root, 'var/lib/heat-config/heat-config-script') });
}

function dueSince2000(w: World, ids: string[]): void {
  const absentSince = Object.fromEntries(ids.map((id) => [id, '2000-01-01T00:00:00.000Z']));
  writeFileSync(join(w.deployedDir, ABSENT_RECORD_NAME), JSON.stringify({ version: 1, absentSince }));
}

test("a pruned deployment's files in its hook's working dir go with it; a listed one's, and others', stay", async (t) => {
  const w = scriptWorld(t);
  const [old, current] = ['0190a6c4-0000-7000-8000-000000000001', '0190a6c4-0000-7000-8000-000000000002'];
  w.deployments([deployment(old, 'script'), deployment(current, 'script')]);
  const first = await runBin([], w.env);
  assert.equal(first.code, 0, first.stderr);
  assert.deepEqual(readdirSync(w.working).sort(), [old, current].sort(), 'the script hook kept a copy of each script');
  // What other hooks keep beside it (`<id>.pp`, `<id>_pillar/`), and an operator's own file.
  writeFileSync(join(w.working, `${old}.pp`), 'notice("x")');
  mkdirSync(join(w.working, `${old}_pillar`));
  writeFileSync(join(w.working, `${old}_pillar/top.sls`), 'base: {}');
  writeFileSync(join(w.working, 'operator-notes.txt'), 'keep me');

  w.deployments([deployment(current, 'script')]);
  assert.equal((await runBin([], w.env)).code, 0);
  assert.ok(existsSync(join(w.working, old)), 'missing for less than the prune age: kept');
  dueSince2000(w, [old]);
  const due = await runBin([], w.env);
  assert.equal(due.code, 0, due.stderr);
  assert.deepEqual(readdirSync(w.working).sort(), [current, 'operator-notes.txt'].sort());
  assert.equal(existsSync(join(w.deployedDir, `${old}.json`)), false);
  assert.ok(existsSync(join(w.deployedDir, `${current}.json`)));
});

test("an id's hook files are not another id's whose name starts with it; a deployment without a group leaves its working dir alone", async (t) => {
  const w = scriptWorld(t);
  w.deployments([deployment('a1', 'script'), deployment('a1_b', 'script'), deployment('n1', 'Heat::Ungrouped')]);
  assert.equal((await runBin([], w.env)).code, 0);
  writeFileSync(join(w.working, 'n1'), 'not a file of the ungrouped deployment n1');
  w.deployments([deployment('a1_b', 'script')]);
  assert.equal((await runBin([], w.env)).code, 0);
  dueSince2000(w, ['a1', 'n1']);
  const due = await runBin([], w.env);
  assert.equal(due.code, 0, due.stderr);
  assert.deepEqual(readdirSync(w.working).sort(), ['a1_b', 'n1']);
  assert.equal(existsSync(join(w.deployedDir, 'a1.json')), false);
  assert.equal(existsSync(join(w.deployedDir, 'n1.json')), false);
});

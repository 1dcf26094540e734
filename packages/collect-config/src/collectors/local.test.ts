import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { contextFor, optionsFor, tempDir } from '../test-support/fixtures.ts';
import { heatLocalCollector } from './heat-local.ts';
import { localCollector } from './local.ts';

test('local: one output per JSON file, by basename in C byte order; hidden files and dirs skipped', async () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'b.json'), '{"b": 1}');
  writeFileSync(join(dir, 'B'), '[1]');
  writeFileSync(join(dir, '_a'), '"x"');
  writeFileSync(join(dir, '.hidden'), 'not json');
  mkdirSync(join(dir, 'sub'));
  const missing = join(dir, 'missing');
  const ctx = contextFor(optionsFor(['--local-path', missing, '--local-path', dir]));
  const outcome = await localCollector.collect(ctx);
  assert.deepEqual(outcome, {
    kind: 'data',
    outputs: [
      ['B', [1]],
      ['_a', 'x'],
      ['b.json', { b: 1 }],
    ],
  });
  assert.ok(ctx.log.lines.some((line) => line.level === 'warn' && line.message === `${missing} not found. Skipping`));
});

test('local: a world-writable directory or file, or invalid JSON, makes the source unavailable', async () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'a'), '{}');
  const ctx = contextFor(optionsFor(['--local-path', dir]));
  chmodSync(dir, 0o777);
  assert.equal((await localCollector.collect(ctx)).kind, 'unavailable');
  chmodSync(dir, 0o755);
  chmodSync(join(dir, 'a'), 0o666);
  assert.deepEqual(await localCollector.collect(ctx), {
    kind: 'unavailable',
    reason: `${join(dir, 'a')} is world writable. This is a security risk.`,
  });
  chmodSync(join(dir, 'a'), 0o644);
  writeFileSync(join(dir, 'a'), '{oops');
  const outcome = await localCollector.collect(ctx);
  assert.equal(outcome.kind, 'unavailable');
  assert.match((outcome as { reason: string }).reason, /is not valid JSON/);
});

test('heat_local: files shallow-merged in order, missing and invalid ones skipped, nothing = unavailable', async () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'one'), '{"a": 1, "b": {"x": 1}}');
  writeFileSync(join(dir, 'two'), '{"b": {"y": 2}}');
  writeFileSync(join(dir, 'bad'), '{');
  const ctx = contextFor(
    optionsFor(['--heat_local-path', join(dir, 'one'), '--heat_local-path', join(dir, 'bad'), '--heat_local-path', join(dir, 'two')]),
  );
  assert.deepEqual(await heatLocalCollector.collect(ctx), { kind: 'data', outputs: [['heat_local', { a: 1, b: { y: 2 } }]] });
  const none = contextFor(optionsFor(['--heat_local-path', join(dir, 'absent')]));
  assert.equal((await heatLocalCollector.collect(none)).kind, 'unavailable');
});

test('local and heat_local: a file that is not UTF-8 is invalid, as in the original, not read with U+FFFD in place', async () => {
  const dir = tempDir();
  // "é" in Latin-1: one byte 0xE9, which no UTF-8 decoder accepts here.
  const latin1 = Buffer.concat([Buffer.from('{"motd": "caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
  writeFileSync(join(dir, 'latin1'), latin1);
  const local = await localCollector.collect(contextFor(optionsFor(['--local-path', dir])));
  assert.equal(local.kind, 'unavailable');
  assert.match((local as { reason: string }).reason, /latin1 is not valid JSON/);

  writeFileSync(join(dir, 'good'), '{"motd": "caf\u00e9", "a": 1}');
  const ctx = contextFor(optionsFor(['--heat_local-path', join(dir, 'good'), '--heat_local-path', join(dir, 'latin1')]));
  assert.deepEqual(await heatLocalCollector.collect(ctx), { kind: 'data', outputs: [['heat_local', { motd: 'caf\u00e9', a: 1 }]] });
  assert.ok(ctx.log.lines.some((line) => line.message.startsWith(`${join(dir, 'latin1')} is not valid JSON`)));
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SoftwareConfig } from '@hearth/protocol';
import type { DeploymentRow } from '../store/schema.ts';
import { deriveConfig, sortDerived } from './derive.ts';

const config: SoftwareConfig = {
  id: '00000000-0000-4000-8000-000000000001',
  name: 'web',
  group: 'script',
  config: '#!/bin/sh\necho $foo',
  inputs: [
    { name: 'foo', type: 'String', default: 'dflt' },
    { name: 'bar', type: 'Number' },
    { name: 'deploy_signal_id', type: 'String' },
  ],
  outputs: [{ name: 'result', type: 'String', error_output: false }],
  options: { a: 1 },
  creation_time: '2026-01-01T00:00:00Z',
};

function row(overrides: Partial<DeploymentRow> = {}): DeploymentRow {
  return {
    id: '00000000-0000-4000-8000-0000000000d1',
    project_id: 'default',
    server_id: 'srv-1',
    config_id: config.id,
    derived_config_id: '00000000-0000-4000-8000-0000000000c1',
    derived_at: '2026-01-02T03:04:05.678Z',
    name: null,
    action: 'CREATE',
    status: 'IN_PROGRESS',
    status_reason: null,
    input_values: JSON.stringify({ bar: 7, extra: 'x' }),
    output_values: null,
    signal_transport: 'HEARTH_SIGNAL',
    timeout_s: 60,
    deadline_at: null,
    fetched_at: null,
    last_heartbeat_at: null,
    created_at: '2026-01-02T03:04:05.678Z',
    updated_at: null,
    stack_id: null,
    stack_name: null,
    resource_name: null,
    access_key_id: null,
    ...overrides,
  };
}

test('derived config: declared inputs, then undeclared values, then deploy_* inputs (Heat §3.3)', () => {
  const derived = deriveConfig(config, row(), {
    inputs: [
      ['deploy_signal_id', 'http://127.0.0.1:1/signal?token=t'],
      ['deploy_signal_verb', 'POST'],
    ],
  });
  assert.equal(derived.id, '00000000-0000-4000-8000-0000000000c1');
  assert.equal(derived.name, 'web');
  assert.equal(derived.group, 'script');
  assert.equal(derived.creation_time, '2026-01-02T03:04:05Z');
  assert.deepEqual(derived.options, { a: 1 });
  assert.deepEqual(
    derived.inputs.map((i) => [i.name, i.value]),
    [
      ['foo', 'dflt'],
      ['bar', 7],
      ['deploy_signal_id', 'http://127.0.0.1:1/signal?token=t'],
      ['extra', 'x'],
      ['deploy_server_id', 'srv-1'],
      ['deploy_action', 'CREATE'],
      ['deploy_stack_id', 'deployments/00000000-0000-4000-8000-0000000000d1'],
      ['deploy_resource_name', 'deployment'],
      ['deploy_signal_transport', 'HEARTH_SIGNAL'],
      ['deploy_signal_verb', 'POST'],
      ['deploy_timeout', '60'],
    ],
  );
  assert.equal(derived.inputs.find((i) => i.name === 'deploy_action')?.description, 'Name of the current action being deployed');
});

test('NO_SIGNAL deployments carry no signal inputs; the deployment name wins over the config name', () => {
  const derived = deriveConfig({ ...config, inputs: [] }, row({ signal_transport: 'NO_SIGNAL', name: 'my-deploy' }), null);
  assert.equal(derived.name, 'my-deploy');
  assert.ok(!derived.inputs.some((i) => i.name === 'deploy_signal_id' || i.name === 'deploy_signal_verb'));
});

test('a deployment in a stack names its stack and resource as Heat does', () => {
  const derived = deriveConfig(config, row({ stack_id: 'sid', stack_name: 'web', resource_name: 'install' }), null);
  const value = (name: string) => derived.inputs.find((i) => i.name === name)?.value;
  assert.equal(value('deploy_stack_id'), 'web/sid');
  assert.equal(value('deploy_resource_name'), 'install');
});

test('entries sort by name, ties by creation time', () => {
  const make = (name: string, createdAt: string, id: string) => ({
    derived: { ...deriveConfig(config, row(), null), name, id },
    createdAt,
    id,
  });
  const sorted = sortDerived([make('b', '1', 'x1'), make('a', '2', 'x2'), make('a', '1', 'x3')]);
  assert.deepEqual(
    sorted.map((d) => d.id),
    ['x3', 'x2', 'x1'],
  );
});

// Heat sorts with Python, by code point; JavaScript's `<` compares UTF-16 units, which put a name
// starting with an emoji (U+1F600, a surrogate pair from U+D83D) before one starting with U+FF21.
test('sortDerived orders names by code point, as Python does', () => {
  const make = (name: string, id: string) => ({ derived: { ...deriveConfig(config, row(), null), name, id }, createdAt: '1', id });
  const sorted = sortDerived([make('\u{1F600} smile', 'emoji'), make('\uFF21 wide', 'wide'), make('z', 'ascii')]);
  assert.deepEqual(
    sorted.map((d) => d.id),
    ['ascii', 'wide', 'emoji'],
  );
});

// Heat builds the entry with `or`: a config without a body is '' (hook-script writes it to a file:
// null fails with a TypeError, so no hook runs and nothing signals), and empty names and groups fall back.
test('deriveConfig: a config without a body gives "", empty name and group fall back as in Heat', () => {
  const derived = deriveConfig({ ...config, name: '', group: '', config: null }, row({ name: '' }), null);
  assert.equal(derived.config, '');
  assert.equal(derived.name, '00000000-0000-4000-8000-0000000000d1');
  assert.equal(derived.group, 'Heat::Ungrouped');
  assert.deepEqual(deriveConfig({ ...config, config: { a: 1 } }, row(), null).config, { a: 1 });
  assert.equal(deriveConfig(config, row({ name: '' }), null).name, 'web');
});

test('deriveConfig: a value stored in the config wins over its default (heatclient derives configs itself); a deployment value over both', () => {
  const withValue: SoftwareConfig = { ...config, inputs: [{ name: 'foo', type: 'String', default: 'dflt', value: 'given' }] };
  const foo = (c: SoftwareConfig, values: Record<string, unknown>) =>
    deriveConfig(c, row({ input_values: JSON.stringify(values) }), null).inputs.find((input) => input.name === 'foo')?.value;
  assert.equal(foo(withValue, {}), 'given');
  assert.equal(foo(withValue, { foo: 'deployed' }), 'deployed');
  assert.equal(foo(config, {}), 'dflt');
  assert.equal(foo({ ...config, inputs: [{ name: 'foo', type: 'String' }] }, {}), null);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureType, UnknownTypeError } from './value-types.ts';

const accepts = (type: string, value: string): void =>
  assert.equal(ensureType(value, type), value, `${type} should accept ${JSON.stringify(value)}`);
const refuses = (type: string, value: string): void =>
  assert.throws(
    () => ensureType(value, type),
    new RegExp(`cannot interpret value [\\s\\S]* as type ${type}$`),
    `${type} should refuse ${JSON.stringify(value)}`,
  );

test('each type accepts and refuses what the original does', () => {
  accepts('int', '42');
  refuses('int', '-1');
  refuses('int', '');
  accepts('default', '');
  accepts('default', 'abc_123');
  refuses('default', 'a-b');
  refuses('default', '1.0');
  accepts('netaddress', '192.0.2.1/24');
  accepts('netdevice', 'eth0:1');
  refuses('netaddress', 'a b');
  accepts('username', 'heat-admin');
  refuses('username', '');
  accepts('dsn', 'mysql://user:pass@host/db?charset=utf8');
  accepts('dsn', 'sqlite:///var/lib/db.sqlite');
  refuses('dsn', 'not a dsn');
  accepts('swiftdevices', 'r1z1-192.168.0.2:%PORT%/d1,r1z2-192.168.0.3:%PORT%/d2');
  refuses('swiftdevices', 'r1z1-host/d1');
  accepts('raw', 'anything at all\n{}');
});

test('like Python re.match, $ also matches before one final newline', () => {
  accepts('default', 'abc\n');
  accepts('int', '12\n');
  refuses('int', '12\n\n');
});

test('an unknown type is its own error', () => {
  assert.throws(() => ensureType('x', 'float'), UnknownTypeError);
});

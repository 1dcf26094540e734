import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger, isLogLevel, type LoggerOptions } from './logger.ts';

/** One parsed log line: the four fixed keys, then free-form fields whose shapes the assertions check. */
interface LogRecord {
  time: string;
  level: string;
  name: string;
  msg: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- fields are arbitrary JSON, read by the assertions
  [field: string]: any;
}

/** A logger writing into an array of lines. */
function capture(options: Omit<LoggerOptions, 'stream'>) {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString());
      callback();
    },
  });
  return {
    logger: createLogger({ ...options, stream }),
    lines,
    records: (): LogRecord[] => lines.map((line) => JSON.parse(line) as LogRecord),
  };
}

test('json lines carry time, level, name, msg and then the fields, one object per line', () => {
  const { logger, lines, records } = capture({ name: 'os-collect-config' });
  logger.info('collected', { key: 'heat', bytes: 12 });
  assert.equal(lines.length, 1);
  assert.ok(lines[0]!.endsWith('}\n'));
  const record = records()[0]!;
  assert.deepEqual(Object.keys(record), ['time', 'level', 'name', 'msg', 'key', 'bytes']);
  assert.equal(record.level, 'info');
  assert.equal(record.name, 'os-collect-config');
  assert.equal(record.msg, 'collected');
  assert.equal(record.bytes, 12);
  assert.ok(Math.abs(Date.parse(record.time) - Date.now()) < 5000);
});

test('lines below the level are dropped; default level is info', () => {
  const { logger, records } = capture({ name: 'x' });
  logger.debug('hidden');
  logger.info('shown');
  logger.warn('shown too');
  assert.deepEqual(
    records().map((record) => record.msg),
    ['shown', 'shown too'],
  );
  assert.equal(logger.isLevelEnabled('debug'), false);
  const quiet = capture({ name: 'x', level: 'error' });
  quiet.logger.warn('hidden');
  quiet.logger.error('boom');
  assert.deepEqual(
    quiet.records().map((record) => record.level),
    ['error'],
  );
  const verbose = capture({ name: 'x', level: 'debug' });
  verbose.logger.debug('seen');
  assert.equal(verbose.records().length, 1);
});

test('values of secret-looking keys become *** at any depth', () => {
  const { logger, lines, records } = capture({ name: 'x' });
  logger.info('config', {
    password: 'hunter2',
    auth: { user_id: 'u1', Secret: 's3', access_key_id: 'AKIA', secret_access_key: 'sk', nested: [{ token: 't0k' }] },
    Signature: 'sig',
    temp_url_sig: 'abc',
    private_key: 'pem',
    secretKey: 'camel',
    X_Auth_Token: 'tok',
    authorization: 'Bearer abc',
    monkey: 'not a secret',
  });
  const record = records()[0]!;
  assert.equal(record.password, '***');
  assert.equal(record.auth.Secret, '***');
  assert.equal(record.auth.secret_access_key, '***');
  assert.equal(record.auth.access_key_id, 'AKIA');
  assert.equal(record.auth.user_id, 'u1');
  assert.equal(record.auth.nested[0].token, '***');
  for (const key of ['Signature', 'temp_url_sig', 'private_key', 'secretKey', 'X_Auth_Token', 'authorization'])
    assert.equal(record[key], '***', key);
  assert.equal(record.monkey, 'not a secret');
  for (const secret of ['hunter2', 's3', 'sk', 't0k', 'pem', 'camel', 'Bearer abc']) assert.ok(!lines[0]!.includes(secret), secret);
});

test('signed URLs and JSON.parse excerpts are hidden in the message and in every string field, in both formats', () => {
  const url = 'http://h:8000/v1/signal/arn?AWSAccessKeyId=AK&Signature=S1GNED&SignatureVersion=2';
  let parseError: Error | undefined;
  try {
    JSON.parse('{"db_password": S3cretPW}');
  } catch (error) {
    parseError = error as Error;
  }
  const json = capture({ name: 'x' });
  json.logger.warn(`could not fetch ${url}`, {
    url,
    reason: parseError!.message,
    nested: [{ detail: `GET ${url} failed` }],
    error: parseError,
  });
  const line = json.lines.join('');
  assert.equal(line.includes('S1GNED'), false, line);
  assert.equal(line.includes('S3cret'), false, line);
  const record = json.records()[0]!;
  assert.equal(record.msg, 'could not fetch http://h:8000/v1/signal/arn?AWSAccessKeyId=AK&Signature=***&SignatureVersion=2');
  assert.equal(record.url, 'http://h:8000/v1/signal/arn?AWSAccessKeyId=AK&Signature=***&SignatureVersion=2');
  assert.equal(record.reason, "Unexpected token 'S' in JSON");
  assert.match(record.nested[0].detail, /Signature=\*\*\*&/);
  assert.equal(record.error.message, "Unexpected token 'S' in JSON");
  const text = capture({ name: 'x', format: 'text' });
  text.logger.error(`PUT ${url} was not acknowledged`, { reason: parseError!.message });
  assert.equal(text.lines.join('').includes('S1GNED') || text.lines.join('').includes('S3cret'), false, text.lines.join(''));
  assert.match(
    text.lines[0]!,
    /ERROR x: PUT http:\/\/h:8000\/v1\/signal\/arn\?AWSAccessKeyId=AK&Signature=\*\*\*&SignatureVersion=2 was not acknowledged/,
  );
});

test('child loggers add their fields to every line and can be nested', () => {
  const { logger, records } = capture({ name: 'heat-config' });
  const child = logger.child({ deployment: 'd1', token: 'secret-value' });
  child.child({ hook: 'script' }).warn('slow', { seconds: 3 });
  logger.info('plain');
  const [first, second] = records() as [LogRecord, LogRecord];
  assert.equal(first.deployment, 'd1');
  assert.equal(first.hook, 'script');
  assert.equal(first.seconds, 3);
  assert.equal(first.token, '***');
  assert.equal(second.deployment, undefined);
});

test('errors, circular objects, bigints and reserved keys are written safely', () => {
  const { logger, records } = capture({ name: 'x' });
  const error = Object.assign(new Error('connect refused'), { code: 'ECONNREFUSED' });
  const circular: Record<string, unknown> = { a: 1 };
  circular.self = circular;
  logger.error('failed', { err: error, circular, big: 10n, inf: Infinity, msg: 'clash', skipped: undefined });
  const record = records()[0]!;
  assert.equal(record.msg, 'failed');
  assert.equal(record['field.msg'], 'clash');
  assert.equal(record.err.message, 'connect refused');
  assert.equal(record.err.code, 'ECONNREFUSED');
  assert.match(record.err.stack, /connect refused/);
  assert.equal(record.circular.self, '[Circular]');
  assert.equal(record.big, '10');
  assert.equal(record.inf, 'Infinity');
  assert.equal('skipped' in record, false);
});

test('text format is one readable line with key=value pairs', () => {
  const { logger, lines } = capture({ name: 'os-refresh-config', format: 'text' });
  logger.warn('phase failed', { phase: 'configure', detail: 'two words', code: 2, password: 'p' });
  assert.match(
    lines[0]!,
    /^\d{4}-\d\d-\d\dT[\d:.]+Z WARN os-refresh-config: phase failed phase=configure detail="two words" code=2 password=\*\*\*\n$/,
  );
});

test('isLogLevel accepts only the four levels', () => {
  assert.ok(isLogLevel('warn'));
  assert.equal(isLogLevel('WARN'), false);
  assert.equal(isLogLevel('trace'), false);
  assert.equal(isLogLevel('toString'), false);
});

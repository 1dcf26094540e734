import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExitError } from '@hearth/agent-kit/exit';
import { parseFlags } from './args.ts';
import { runBin } from './run-bin.ts';

// cfn-signal's table: `--exit` is both a flag and a prefix of `--exit-code`, as in heat-cfntools.
const SIGNAL = {
  reason: { type: 'string', short: 'r' },
  data: { type: 'string', short: 'd' },
  'exit-code': { type: 'string', short: 'e' },
  exit: { type: 'string' },
  insecure: { type: 'boolean', short: 'k' },
} as const;

const parse = (argv: string[]) => parseFlags(argv, SIGNAL, 'usage: t');

function usageError(argv: string[], message: RegExp): void {
  assert.throws(
    () => parse(argv),
    (error: unknown) => error instanceof ExitError && error.code === 2 && message.test(error.message),
    argv.join(' '),
  );
}

test('an unambiguous prefix of a long flag is that flag, as argparse takes it, with or without =VALUE', () => {
  assert.deepEqual({ ...parse(['--rea', 'x', '--exit-c', '0', '--ins']).values }, { reason: 'x', 'exit-code': '0', insecure: true });
  assert.deepEqual({ ...parse(['--reas=x y']).values }, { reason: 'x y' });
  assert.deepEqual({ ...parse(['--exit-c=-1']).values }, { 'exit-code': '-1' });
  assert.deepEqual({ ...parse(['--rea', '-- failed']).values }, { reason: '-- failed' }, 'a dash value after a completed flag');
});

test('an exact name wins over a longer flag it is a prefix of', () => {
  assert.deepEqual({ ...parse(['--exit', '1']).values }, { exit: '1' });
  assert.deepEqual({ ...parse(['--exit=1']).values }, { exit: '1' });
});

test('an ambiguous prefix is a usage error naming the candidates; an unknown flag stays one', () => {
  usageError(['--exi', '1'], /^ambiguous option: --exi could match --exit-code, --exit\nusage: t/);
  usageError(['--ex=1'], /ambiguous option: --ex could match --exit-code, --exit/);
  usageError(['--zzz'], /Unknown option '--zzz'/);
  // in a value's place, argparse sees a flag too: -r has no value
  usageError(['-r', '--da'], /argument missing|ambiguous/);
});

test('values and what follows -- are never completed', () => {
  const { values, positionals } = parse(['-r', 'x', '--', '--rea', '--exi']);
  assert.deepEqual({ ...values }, { reason: 'x' });
  assert.deepEqual(positionals, ['--rea', '--exi']);
  assert.deepEqual({ ...parse(['-r', '--zz a']).values }, { reason: '--zz a' }, 'a dash value with a space that names no flag');
});

test('the real cfn-push-stats takes abbreviated flags and refuses an ambiguous one with exit 2', async (t) => {
  const received: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push(body);
      res.writeHead(200).end('<PutMetricDataResponse/>');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const root = mkdtempSync(join(tmpdir(), 'cfn-args-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;

  const run = await runBin('cfn-push-stats', ['--access-k', 'AK', '--secret', 'S', '--ur', url, '--heartb', '--wat', 'HighLoad'], {
    env: { HEARTH_ROOT: root },
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(received.length, 1);
  const params = new URLSearchParams(received[0]);
  assert.equal(params.get('MetricData.member.1.MetricName'), 'Heartbeat');
  assert.equal(params.get('AWSAccessKeyId'), 'AK');
  assert.equal(params.get('MetricData.member.1.Dimensions.member.2.Value'), 'HighLoad');

  const ambiguous = await runBin('cfn-push-stats', ['--mem', '--ur', url], { env: { HEARTH_ROOT: root } });
  assert.equal(ambiguous.code, 2);
  assert.match(ambiguous.stderr, /ambiguous option: --mem could match --mem-util, --mem-used, --mem-avail, --memory-units/);
  assert.equal(received.length, 1, 'nothing sent');
});

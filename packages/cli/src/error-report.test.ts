import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HearthApiError, HearthConnectionError } from '@hearth/client';
import { CommanderError } from 'commander';
import { describeError, hintFor } from './error-report.ts';
import { ExitError } from './errors.ts';

const context = { url: 'http://127.0.0.1:8000' };
const target = { method: 'GET', url: 'http://127.0.0.1:8000/v1/default/x' };

test('an API error exits 1 with the server message, status, ERR_ code and a hint', () => {
  const error = new HearthApiError({
    ...target,
    status: 404,
    code: 'ERR_DEPLOYMENT_NOT_FOUND',
    message: 'Software deployment x does not exist.',
  });
  assert.deepEqual(describeError(error, context), {
    exitCode: 1,
    lines: [
      'hearth: Software deployment x does not exist. (HTTP 404, ERR_DEPLOYMENT_NOT_FOUND)',
      'hearth: hint: see the deployments with `hearth deployment list`',
    ],
  });
});

test('a rejected token exits 1 and points at HEARTH_TOKEN', () => {
  const error = new HearthApiError({ ...target, status: 401, code: 'ERR_AUTH_INVALID', message: 'The credential is not valid.' });
  const report = describeError(error, context);
  assert.equal(report.exitCode, 1);
  assert.match(report.lines[1] ?? '', /HEARTH_TOKEN.*admin-token/);
});

test('an unreachable server exits 69 and points at HEARTH_URL', () => {
  const error = new HearthConnectionError({
    ...target,
    code: 'ERR_CONNECTION',
    causeCode: 'ECONNREFUSED',
    message: 'Cannot reach hearth-server.',
  });
  const report = describeError(error, context);
  assert.equal(report.exitCode, 69);
  assert.equal(report.lines[0], 'hearth: Cannot reach hearth-server. (ERR_CONNECTION)');
  assert.match(report.lines[1] ?? '', /HEARTH_URL.*http:\/\/127\.0\.0\.1:8000/);
});

test('a connection cut mid-request exits 69 and points at the log and the body size, not at starting the server', () => {
  for (const causeCode of ['EPIPE', 'ECONNRESET']) {
    const error = new HearthConnectionError({ ...target, code: 'ERR_CONNECTION', causeCode, message: 'hearth-server cut the connection.' });
    const report = describeError(error, context);
    assert.equal(report.exitCode, 69);
    assert.match(report.lines[1] ?? '', /hearth-server's log.*smaller body/);
    assert.doesNotMatch(report.lines[1] ?? '', /start hearth-server/);
  }
});

test('an ExitError keeps its code; an empty message prints nothing', () => {
  assert.deepEqual(describeError(new ExitError(2, 'still IN_PROGRESS', { hint: 'wait longer' }), context), {
    exitCode: 2,
    lines: ['hearth: still IN_PROGRESS', 'hearth: hint: wait longer'],
  });
  assert.deepEqual(describeError(new ExitError(1), context), { exitCode: 1, lines: [] });
});

test('commander errors exit 64, help and version 0, silently (commander printed them)', () => {
  assert.deepEqual(describeError(new CommanderError(1, 'commander.unknownOption', 'x'), context), { exitCode: 64, lines: [] });
  assert.deepEqual(describeError(new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)'), context), { exitCode: 0, lines: [] });
});

test('anything else exits 1 as an unexpected error', () => {
  const report = describeError(new TypeError('boom'), context);
  assert.equal(report.exitCode, 1);
  assert.equal(report.lines[0], 'hearth: unexpected error: boom');
});

test('codes without a hint get none', () => {
  assert.equal(hintFor('ERR_SIGNAL_INVALID', context), undefined);
});

test('stack and wait-condition codes point at the command that helps', () => {
  assert.match(hintFor('ERR_STACK_NOT_FOUND', context) ?? '', /hearth stack list/);
  assert.match(hintFor('ERR_WAIT_CONDITION_NOT_FOUND', context) ?? '', /hearth waitcondition list --stack/);
  assert.match(hintFor('ERR_WAIT_CONDITION_DONE', context) ?? '', /new wait condition/);
});

test('ERR_AUTH_FORBIDDEN points at the credential the command needs', () => {
  const forbidden = (credential: 'operator' | 'agent' | undefined): string[] =>
    describeError(
      new HearthApiError({ ...target, credential, status: 403, code: 'ERR_AUTH_FORBIDDEN', message: 'Not with this credential.' }),
      context,
    ).lines;
  const agent = forbidden('agent');
  assert.match(agent[1] ?? '', /hint: this command sends a server's agent credential token .*hearth server create.*not the admin token/);
  assert.doesNotMatch(agent[1] ?? '', /use the admin token/);
  assert.match(forbidden('operator')[1] ?? '', /hint: use the admin token \(HEARTH_TOKEN\), not an agent credential/);
  assert.match(forbidden(undefined)[1] ?? '', /use the admin token/);
  assert.match(hintFor('ERR_AUTH_INVALID', { ...context, credential: 'agent' }) ?? '', /agent credential token/);
  assert.match(hintFor('ERR_AUTH_INVALID', context) ?? '', /admin-token/);
});

test('a server that accepts but does not answer gets a hint about its health, not about starting it', () => {
  const hint = hintFor('ERR_TIMEOUT', context) ?? '';
  assert.match(hint, /http:\/\/127\.0\.0\.1:8000 accepted the connection but did not answer/);
  assert.doesNotMatch(hint, /^start hearth-server/);
  assert.match(hintFor('ERR_CONNECTION', context) ?? '', /^start hearth-server/);
});

test('an unknown endpoint under a base URL with a path hints to drop the path', () => {
  assert.equal(
    hintFor('ERR_ROUTE_NOT_FOUND', { url: 'http://127.0.0.1:8000/v1' }),
    "HEARTH_URL (or --url) is http://127.0.0.1:8000/v1: give hearth-server's base URL, without /v1",
  );
  assert.match(hintFor('ERR_ROUTE_NOT_FOUND', context) ?? '', /as recent as this hearth/);
});

test('control characters in a message from the server or a VM are shown escaped', () => {
  const error = new HearthApiError({ ...target, status: 404, code: 'ERR_STACK_NOT_FOUND', message: 'Stack "a\x1b[2J\u202eb" not found.' });
  assert.deepEqual(describeError(error, context).lines[0], 'hearth: Stack "a\\x1b[2J\\u202eb" not found. (HTTP 404, ERR_STACK_NOT_FOUND)');
  const failed = describeError(new ExitError(1, 'deployment d FAILED: oops\r\x1b]0;t\x07'), context);
  assert.deepEqual(failed.lines, ['hearth: deployment d FAILED: oops\\r\\x1b]0;t\\x07']);
});

// cfn-signal: signal a wait condition handle. Exits 0 only when the server acknowledged (2xx).
import { ExitError } from '@hearth/agent-kit/exit';
import { httpRequest } from '@hearth/agent-kit/http';
import { agentPaths } from '@hearth/agent-kit/paths';
import { redactText, redactUrl } from '@hearth/agent-kit/redact';
import { cfnErrorSummary } from '../shared/describe-stack-resource.ts';
import { resolveInstanceId } from '../shared/instance-id.ts';
import { signalBody } from './body.ts';
import { CFN_SIGNAL_USAGE, parseCfnSignalArgs } from './options.ts';
import { sendSignal } from './send.ts';

/** Exit codes when no answer came: curl's, which scripts written for the original may test. */
const CURL_COULD_NOT_CONNECT = 7;
const CURL_TIMED_OUT = 28;

/** Injected dependencies (tests). */
export interface CfnSignalDeps {
  http?: typeof httpRequest;
  env?: NodeJS.ProcessEnv;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
}

/** Runs cfn-signal with `argv`; returns the exit code or throws ExitError. */
export async function cfnSignalMain(argv: string[], deps: CfnSignalDeps = {}): Promise<number> {
  const options = parseCfnSignalArgs(argv);
  const stdout = deps.stdout ?? process.stdout;
  const stderr = deps.stderr ?? process.stderr;
  if (options.help) {
    stdout.write(`${CFN_SIGNAL_USAGE}\n`);
    return 0;
  }
  const env = deps.env ?? process.env;
  const http = deps.http ?? httpRequest;
  if (options.deprecatedExit) stderr.write('cfn-signal: --exit is deprecated, use -e or --exit-code\n');
  const uniqueId = options.uniqueId ?? (await resolveInstanceId({ paths: agentPaths(env), env, http })).id;
  const body = signalBody({ Status: options.status, Reason: options.reason, UniqueId: uniqueId, Data: options.data });
  const safeUrl = redactUrl(options.url);
  const outcome = await sendSignal({
    url: options.url,
    body,
    insecure: options.insecure,
    retries: options.retries,
    timeoutMs: options.timeoutMs,
    retryDelayMs: options.retryDelayMs,
    http,
    onRetry: (attempt, reason, delayMs) => stderr.write(`cfn-signal: attempt ${attempt} failed (${reason}); retrying in ${delayMs} ms\n`),
  });
  if (outcome.kind === 'error') {
    const code =
      outcome.error.code === 'ERR_HTTP_TIMEOUT' ? CURL_TIMED_OUT : outcome.error.code === 'ERR_HTTP_NETWORK' ? CURL_COULD_NOT_CONNECT : 1;
    throw new ExitError(code, `cfn-signal: ${outcome.error.message}`);
  }
  const { status } = outcome.response;
  if (status < 200 || status > 299) {
    // redactText: a proxy or a misconfigured server may echo the signed request (its Signature) back in its reply.
    throw new ExitError(
      1,
      `cfn-signal: PUT ${safeUrl} was not acknowledged: status ${status}: ${redactText(cfnErrorSummary(outcome.response))}`,
    );
  }
  if (options.verbose) stderr.write(`cfn-signal: ${options.status} acknowledged with status ${status} by ${safeUrl}\n`);
  return 0;
}

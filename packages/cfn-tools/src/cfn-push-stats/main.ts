// cfn-push-stats: collect the metrics asked for and send each as PutMetricData; once (exit 1 if any was not
// acknowledged), or on every tick of --schedule until SIGTERM/SIGINT.
import { ExitError } from '@hearth/agent-kit/exit';
import { httpRequest, type HttpRequestOptions, type HttpResponse } from '@hearth/agent-kit/http';
import { setLongTimeout } from '@hearth/agent-kit/long-timer';
import { createLogger, type Logger } from '@hearth/agent-kit/logger';
import { agentPaths } from '@hearth/agent-kit/paths';
import { loadCredentials, type Credentials } from '../shared/credentials.ts';
import { cfnErrorSummary } from '../shared/describe-stack-resource.ts';
import { DEFAULT_CLOUDWATCH_PORT, resolveCfnEndpoint } from '../shared/endpoint.ts';
import { readNovaMeta, resolveInstanceId } from '../shared/instance-id.ts';
import { collectMetrics, systemInformationSource, type SystemSource } from './metrics.ts';
import { CFN_PUSH_STATS_USAGE, parseCfnPushStatsArgs, type CfnPushStatsOptions } from './options.ts';
import { putMetricData } from './put-metric-data.ts';

/** Injected dependencies (tests). */
export interface CfnPushStatsDeps {
  env?: NodeJS.ProcessEnv;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  http?: (options: HttpRequestOptions) => Promise<HttpResponse>;
  source?: SystemSource;
  /** Stops --schedule; default SIGTERM or SIGINT. */
  signal?: AbortSignal;
}

interface PushContext {
  options: CfnPushStatsOptions;
  endpointUrl: string;
  insecure: boolean;
  credentials: Credentials;
  dimensions: Array<[string, string]>;
  http: (options: HttpRequestOptions) => Promise<HttpResponse>;
  source: SystemSource;
  log: Logger;
}

/** Collects and sends once; true when every datum was acknowledged (2xx). */
async function pushOnce(ctx: PushContext): Promise<boolean> {
  const data = await collectMetrics(ctx.options, ctx.source);
  if (data.length === 0) ctx.log.warn('no metric asked for: nothing sent');
  let ok = true;
  for (const datum of data) {
    try {
      const response = await putMetricData({
        endpointUrl: ctx.endpointUrl,
        credentials: ctx.credentials,
        datum,
        dimensions: ctx.dimensions,
        insecure: ctx.insecure,
        http: ctx.http,
      });
      if (response.status >= 200 && response.status < 300) ctx.log.debug('metric sent', { ...datum });
      else {
        ok = false;
        ctx.log.error('metric not accepted', { metric: datum.name, status: response.status, reason: cfnErrorSummary(response) });
      }
    } catch (error) {
      ok = false;
      ctx.log.error('metric not sent', { metric: datum.name, error: (error as Error).message });
    }
  }
  return ok;
}

/** Resolves after `ms` on the monotonic clock (any length), or as soon as `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      cancel();
      signal.removeEventListener('abort', done);
      resolve();
    };
    const cancel = setLongTimeout(done, Math.max(0, ms));
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Runs cfn-push-stats with `argv`. */
export async function cfnPushStatsMain(argv: string[], deps: CfnPushStatsDeps = {}): Promise<number> {
  const options = parseCfnPushStatsArgs(argv);
  if (options.help) {
    (deps.stdout ?? process.stdout).write(`${CFN_PUSH_STATS_USAGE}\n`);
    return 0;
  }
  const env = deps.env ?? process.env;
  const paths = agentPaths(env);
  const log = createLogger({
    name: 'cfn-push-stats',
    level: options.verbose ? 'debug' : 'info',
    format: 'text',
    stream: deps.stderr ?? process.stderr,
  });
  const credentials = await loadCredentials({
    credentialFile: options.credentialFile,
    accessKey: options.accessKey,
    secretKey: options.secretKey,
    useDefaultFile: true,
    paths,
    env,
  });
  if (!credentials)
    throw new ExitError(
      1,
      `no credentials: give --credential-file, --access-key and --secret-key, or write ${paths.cfnConfigDir}/cfn-credentials`,
    );
  const endpoint = resolveCfnEndpoint(paths, {
    url: options.url,
    port: DEFAULT_CLOUDWATCH_PORT,
    forcePort: true,
    insecure: options.insecure,
    service: 'cloudwatch',
  });
  if (!endpoint)
    throw new ExitError(
      1,
      `no endpoint: give --url, or write the CFN host to ${paths.heatCfntoolsDir}/cfn-boto-cfg or ${paths.cfnMetadataHintFile}`,
    );
  const http = deps.http ?? httpRequest;
  const tags = Object.entries(readNovaMeta(paths)?.meta ?? {}).filter((entry): entry is [string, string] => typeof entry[1] === 'string');
  const dimensions: Array<[string, string]> = [...tags, ['InstanceId', (await resolveInstanceId({ paths, env, http })).id]];
  if (options.watch !== undefined) dimensions.push(['AlarmName', options.watch]);
  const ctx: PushContext = {
    options,
    endpointUrl: endpoint.url,
    insecure: endpoint.insecure,
    credentials,
    dimensions,
    http,
    source: deps.source ?? systemInformationSource(),
    log,
  };

  if (options.schedule === undefined) return (await pushOnce(ctx)) ? 0 : 1;

  const { default: cron } = await import('node-cron');
  if (!cron.validate(options.schedule))
    throw new ExitError(2, `--schedule '${options.schedule}' is not a cron expression (5 fields, or 6 with seconds first)`);
  let signal = deps.signal;
  if (!signal) {
    const controller = new AbortController();
    for (const name of ['SIGTERM', 'SIGINT'] as const) process.once(name, () => controller.abort());
    signal = controller.signal;
  }
  // node-cron parses the expression and finds the next match from the wall clock as it is now; the wait is a monotonic
  // timer. A started node-cron task waited out a backward step of the clock (NTP on a fresh VM) and walked every
  // missed tick after a forward one; this way a step back finds the next match again and a step forward pushes once.
  const schedule = cron.createTask(options.schedule, () => undefined, { name: 'cfn-push-stats' });
  log.info('cfn-push-stats scheduled', { schedule: options.schedule, endpoint: endpoint.url });
  try {
    while (!signal.aborted) {
      const due = schedule.getNextRuns(1)[0]!.getTime();
      await pause(due - Date.now(), signal);
      // Woken before the match by the wall clock: it was stepped back meanwhile, so the next match is found again.
      if (signal.aborted || Date.now() < due) continue;
      await pushOnce(ctx).catch((error: unknown) => log.error('push failed', { error: (error as Error).message }));
    }
  } finally {
    await schedule.destroy();
  }
  return 0;
}

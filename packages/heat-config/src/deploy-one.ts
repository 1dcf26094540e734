// One deployment, start to finish: convert inputs, resolve components, skip what is done, run the hook
// (or resend a result that was never handed over), hand the result to heat-config-notify, and only then
// write the deployed marker.
import type { Logger } from '@hearth/agent-kit';
import { stopProcessTree } from '@hearth/agent-kit/process-tree';
import { chooseComponent } from './component.ts';
import { GROUPS_WITHOUT_HOOK, findHook } from './hook-path.ts';
import { convertInputs } from './inputs.ts';
import { DeploymentMarkers } from './markers.ts';
import { handoverOf, heartbeatPump, NOTIFY_EXIT_CONFIG, runNotify } from './notify.ts';
import { hookTimeoutSeconds, type HeatConfigOptions } from './options.ts';
import { isStopping, runHook } from './run-hook.ts';
import { interruptedSignalData, signalDataFor, type SignalData } from './signal-data.ts';

/** How one deployment ended, for the run's summary and exit code. */
export type DeploymentOutcome =
  | 'deployed'
  | 'already-deployed'
  | 'skipped'
  /** heat-config-notify settled the result without delivering it (the server refused it): never sent again. */
  | 'signal-refused'
  /** The result is saved but heat-config-notify did not take it: sent again on the next run. */
  | 'notify-failed';

/** Test seams: how long to wait for output a hook's leftovers hold open. */
export interface DeployOneOptions extends Pick<
  HeatConfigOptions,
  'deployedDir' | 'hookDirs' | 'notifyCommand' | 'interrupted' | 'defaultTimeoutSeconds' | 'killGraceMs'
> {
  /** After the hook exits, how long to wait for stdout/stderr held open by processes it left, in ms. Default 2000. */
  outputGraceMs?: number;
}

type Deployment = Record<string, unknown> & { id: string; group: string };

function inputValue(deployment: Deployment, name: string): unknown {
  const inputs = deployment.inputs as Array<{ name: string; value: unknown }>;
  return inputs.find((input) => input.name === name)?.value;
}

/** The deployment as hooks get it: inputs converted, component resolved; or why it is skipped. */
function prepare(raw: unknown, log: Logger): Deployment | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    log.error('Skipping a deployments entry that is not an object');
    return undefined;
  }
  const entry = raw as Record<string, unknown>;
  if (typeof entry.id !== 'string' || !/^[\w.-]+$/.test(entry.id) || entry.id.startsWith('.')) {
    log.error('Skipping a deployment without a usable id', { id: entry.id });
    return undefined;
  }
  const { inputs, warnings } = convertInputs(entry.inputs);
  for (const warning of warnings) log.warn(warning, { id: entry.id });
  const deployment: Deployment = {
    ...entry,
    id: entry.id,
    group: typeof entry.group === 'string' ? entry.group : 'Heat::Ungrouped',
    inputs,
  };
  if (deployment.group !== 'component') return deployment;
  const choice = chooseComponent(deployment.config, inputValue(deployment, 'deploy_action'));
  if ('skip' in choice) {
    log.warn(choice.skip, { id: deployment.id });
    return undefined;
  }
  return { ...deployment, config: choice.config, group: choice.group };
}

/**
 * Stops the hook a heat-config that died left running (killed on its own, or crashed: the hook leads its own
 * process group, so it outlives heat-config), with everything it started: run again beside it, the same hook
 * would run twice at once.
 */
async function stopLeftoverHook(markers: DeploymentMarkers, id: string, options: DeployOneOptions, log: Logger): Promise<void> {
  const pid = markers.liveHook();
  if (pid === undefined) return;
  log.warn(`The hook of ${id} left by a heat-config that died is still running (pid ${pid}); stopping it and what it started`);
  await stopProcessTree(pid, { graceMs: options.killGraceMs, group: true });
}

/** Runs the hook with heartbeats from its fd 3, and turns how it ended into a signal. */
async function runHookToSignal(
  deployment: Deployment,
  hookPath: string,
  markers: DeploymentMarkers,
  options: DeployOneOptions,
  log: Logger,
) {
  const timeoutSeconds = hookTimeoutSeconds(deployment.options, options.defaultTimeoutSeconds, deployment.inputs);
  const heartbeats = heartbeatPump(options.notifyCommand, markers.runningPath, log);
  log.debug(`Running ${hookPath} < ${markers.runningPath}`, { timeoutSeconds });
  const result = await runHook(hookPath, {
    input: JSON.stringify(deployment),
    timeoutMs: timeoutSeconds * 1000,
    killGraceMs: options.killGraceMs,
    ...(options.outputGraceMs === undefined ? {} : { outputGraceMs: options.outputGraceMs }),
    onProgress: (line) => heartbeats.push(line),
    onSpawn: (pid) => {
      try {
        markers.recordHook(pid);
      } catch (error) {
        log.warn('could not record the pid of the hook', { error: (error as Error).message });
      }
    },
  });
  await heartbeats.close();
  const signal = signalDataFor(result);
  const fields = {
    hook: hookPath,
    exitCode: result.exitCode,
    signal: result.signal,
    durationMs: result.durationMs,
    stdoutBytes: Buffer.byteLength(result.stdout),
    stderrBytes: Buffer.byteLength(result.stderr),
    heartbeats: heartbeats.stats.sent,
    deploy_status_code: signal.deploy_status_code,
  };
  if (result.timedOut) log.error(`${hookPath} timed out after ${timeoutSeconds} s; killed it and everything it started`, fields);
  else if (result.startError !== undefined) log.error(result.startError, fields);
  else if (result.exitCode !== 0) log.error(`Error running ${hookPath}. [${fields.exitCode ?? fields.signal}]`, fields);
  else log.info(`Completed ${hookPath}`, fields);
  return signal;
}

/** Deploys one entry of the deployments list; throws only when the disk fails under it. */
export async function deployOne(raw: unknown, options: DeployOneOptions, log: Logger): Promise<DeploymentOutcome> {
  const deployment = prepare(raw, log);
  if (deployment === undefined) return 'skipped';
  const dlog = log.child({ id: deployment.id, deployment: deployment.name, group: deployment.group });
  const markers = new DeploymentMarkers(options.deployedDir, deployment.id);
  let state = markers.state();
  if (state === 'deployed') {
    dlog.warn(`Skipping config ${deployment.id}, already deployed`);
    dlog.warn(`To force-deploy, rm ${markers.deployedPath}`);
    await markers.clearRunning();
    return 'already-deployed';
  }
  let signal: SignalData | undefined;
  if (state === 'result-pending') {
    signal = await markers.readResult();
    if (signal === undefined) {
      dlog.warn(`The saved result of ${deployment.id} cannot be read (damaged by a crash); whether its hook ran cannot be known`, {
        file: markers.notifyPath,
      });
      state = 'interrupted';
    } else {
      dlog.warn(`The hook of ${deployment.id} had finished but its result was not handed over; sending it again`);
      if (await markers.repairRunning(deployment))
        dlog.warn(`${markers.runningPath} was damaged (a crash); written again from the deployment before handing the result over`);
    }
  }
  // A saved result is sent again without its hook, which may be gone by now (or not on this run's hook path).
  if (signal === undefined) {
    const hookPath = findHook(deployment.group, options.hookDirs);
    if (hookPath === undefined) {
      if (!GROUPS_WITHOUT_HOOK.includes(deployment.group))
        dlog.error(`Skipping group ${deployment.group} with no hook script`, { hookDirs: options.hookDirs });
      return 'skipped';
    }
    if (state === 'interrupted') await stopLeftoverHook(markers, deployment.id, options, dlog);
    if (state === 'interrupted' && options.interrupted === 'fail') {
      dlog.warn(`The hook of ${deployment.id} was interrupted; reporting it failed (interrupted policy: fail)`);
      signal = interruptedSignalData(hookPath);
    } else {
      if (state === 'interrupted') dlog.warn(`The hook of ${deployment.id} was interrupted; running it again`);
      await markers.markRunning(deployment);
      signal = await runHookToSignal(deployment, hookPath, markers, options, dlog);
      // Killed because heat-config is being stopped: keep it "interrupted" for the next run.
      if (isStopping()) throw new Error(`heat-config is stopping; ${deployment.id} stays interrupted`);
    }
    await markers.saveResult(signal);
  }
  dlog.debug(`Running ${options.notifyCommand} ${markers.runningPath} < ${markers.notifyPath}`);
  const notified = await runNotify(options.notifyCommand, markers.runningPath, markers.notifyPath);
  const handover = handoverOf(notified);
  if (handover === 'refused') {
    // Sending it again would be refused again, on every run, and keep the configure phase failing for good.
    dlog.error(
      `heat-config-notify could not deliver the result of ${deployment.id} and will not retry it (the server refused it, or the ` +
        `deployment cannot be signalled); marking it deployed. Its result is in ${markers.notifyPath}`,
      { exitCode: notified.exitCode, stderr: notified.stderr.slice(-4000) },
    );
    await markers.markDeployed(deployment);
    return 'signal-refused';
  }
  if (handover === 'failed') {
    const misconfigured =
      notified.exitCode === NOTIFY_EXIT_CONFIG
        ? ` (${options.notifyCommand} cannot use its options, HEARTH_NOTIFY_* environment or the deployment file: see its stderr)`
        : '';
    dlog.error(
      `Error running heat-config-notify. [${notified.exitCode ?? notified.signal}]${misconfigured}; the result is kept and sent again on the next run`,
      {
        stderr: notified.stderr.slice(-4000),
      },
    );
    return 'notify-failed';
  }
  await markers.markDeployed(deployment);
  return 'deployed';
}

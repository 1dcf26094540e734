// `heat-config` (and os-refresh-config's configure.d/55-heat-config): parse, run, exit; only runMain exits.
import { constants } from 'node:os';
import { createLogger, ExitError, runMain } from '@hearth/agent-kit';
import { runHeatConfig } from './heat-config.ts';
import { parseHeatConfigArgs, USAGE, UsageError } from './options.ts';
import { signalRunningHooks } from './run-hook.ts';

/** 128 + the number of the signal that stopped us, once one did. */
let stoppedWith: number | undefined;

// Stopped from outside: stop the hook's tree too (it runs in a process group of its own), leave its running
// marker so the next run knows it was interrupted, start no other deployment, and exit 128 + the signal.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
  process.on(signal, () => {
    stoppedWith = 128 + constants.signals[signal];
    signalRunningHooks('SIGTERM');
    setTimeout(() => signalRunningHooks('SIGKILL'), 2000).unref();
    // Whatever we were waiting for (a lock, heat-config-notify), do not outlive the signal by much.
    setTimeout(() => process.exit(stoppedWith), 5000).unref();
  });
}

void runMain(async (argv) => {
  let options;
  try {
    options = parseHeatConfigArgs(argv);
  } catch (error) {
    if (error instanceof UsageError) throw new ExitError(2, `${USAGE.split('\n\n')[0]}\nheat-config: error: ${error.message}`);
    throw error;
  }
  if (options.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const log = createLogger({ name: 'heat-config', format: options.logFormat, level: options.logLevel });
  const { exitCode } = await runHeatConfig(options, log);
  return stoppedWith ?? exitCode;
});

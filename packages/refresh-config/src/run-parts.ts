// One dib-run-parts pass over a directory: source environment.d, then run each selected script
// in order; the first failure stops the directory and its status is the pass's.
import { statSync } from 'node:fs';
import type { ChildTracker } from './child-processes.ts';
import { sourceEnvironment } from './environment.ts';
import { execScript } from './exec-script.ts';
import { textRunPartsReporter, type RunPartsReporter, type ScriptTiming } from './report.ts';
import { listEnvironmentFiles, listParts, runPartsPattern } from './select-parts.ts';

/** What `runParts` accepts. */
export interface RunPartsOptions {
  /** Environment of the scripts (and of the environment.d files). Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Name filter; default `env.RUN_PARTS_REGEX`, else `^[0-9A-Za-z_-]+$`. */
  pattern?: RegExp;
  /** Where the events go. Default dib-run-parts' text lines on stderr. */
  reporter?: RunPartsReporter;
  /** Registers children for `--timeout`. Default none. */
  tracker?: ChildTracker;
  /** Checked before each script: when it returns true the pass stops as if killed (exit 137). Default never. */
  cancelled?: () => boolean;
  /** Monotonic clock in ms, for timings. Default performance.now. */
  now?: () => number;
}

/** How one pass ended: the same fields whether it succeeded or not. */
export interface RunPartsResult {
  dir: string;
  /** 0, the failing script's status (128+N if killed by signal N), or the failing environment file's status. */
  exitCode: number;
  /** Scripts that ran (the last one failed when exitCode is not 0), in run order. */
  scripts: Array<ScriptTiming & { exitCode: number }>;
}

/** SIGKILL's status as bash reports it, used for a pass cancelled by a timeout. */
const KILLED = 137;

/** Runs dib-run-parts over `dir`, which must be a directory (else it throws, naming it). */
export async function runParts(dir: string, options: RunPartsOptions = {}): Promise<RunPartsResult> {
  const env = options.env ?? process.env;
  const reporter = options.reporter ?? textRunPartsReporter();
  const now = options.now ?? (() => performance.now());
  let isDirectory = false;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch {
    // reported below
  }
  if (!isDirectory) throw new Error(`Scripts directory [${dir}] must exist and be a directory`);
  const names = listParts(dir, options.pattern ?? runPartsPattern(env.RUN_PARTS_REGEX));
  const result: RunPartsResult = { dir, exitCode: 0, scripts: [] };

  let scriptEnv = env;
  let cwd: string | undefined;
  const environmentFiles = listEnvironmentFiles(dir);
  if (environmentFiles.length > 0) {
    if (reporter.sourcingLinePrefix === undefined) environmentFiles.forEach((file) => reporter.sourcing(file));
    const sourced = await sourceEnvironment(environmentFiles, env, {
      announcePrefix: reporter.sourcingLinePrefix,
      tracker: options.tracker,
    });
    if ('exitCode' in sourced) return { ...result, exitCode: sourced.exitCode };
    scriptEnv = sourced.env;
    if (sourced.cwd !== process.cwd()) cwd = sourced.cwd;
  }

  for (const script of names) {
    const path = `${dir}/${script}`;
    if (options.cancelled?.()) return { ...result, exitCode: KILLED };
    reporter.running(path);
    const started = now();
    const exit = await execScript(path, { env: scriptEnv, cwd, tracker: options.tracker });
    const timing = { script, seconds: Math.round(now() - started) / 1000 };
    result.scripts.push({ ...timing, exitCode: exit.exitCode });
    if (exit.exitCode !== 0) {
      reporter.failed({ ...timing, exitCode: exit.exitCode });
      return { ...result, exitCode: exit.exitCode };
    }
    reporter.completed(timing);
  }
  reporter.profile(
    dir,
    result.scripts.map(({ script, seconds }) => ({ script, seconds })),
  );
  return result;
}

// The state of each deployment in the deployed dir, kept in one place:
//   <id>.running      the deployment, written before its hook starts; removed once it is done
//   <id>.notify.json  the hook's result (the signal), written before heat-config-notify runs
//   <id>.json         the deployment, written only after heat-config-notify has the result:
//                     "done, never run again" (55-heat-config wrote it before the hook ran)
//   .<id>.hook        pid and start time of the hook running now, so that the run after a heat-config
//                     that died can stop the hook it left running before running it again
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic, writeFileAtomicSync } from '@hearth/agent-kit';

/** Where one deployment stands. */
export type DeploymentState =
  /** `<id>.json` exists: done (or marked done by an operator / heat-config-rebuild-deployed). */
  | 'deployed'
  /** Never started (or forced again by removing `<id>.json`). */
  | 'new'
  /** Its hook was running when heat-config stopped: no result was kept. */
  | 'interrupted'
  /** Its hook finished and the result is in `<id>.notify.json`, but heat-config-notify had not taken it. */
  | 'result-pending';

/** JSON as Python's `json.dump(indent=2)` writes it: non-ASCII escaped as \uXXXX. */
export function pythonJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The start time of a live process (field 22 of /proc/<pid>/stat, clock ticks after boot); undefined when gone or a zombie. */
export function processStartTime(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // comm may hold spaces and parentheses: the fields start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[0] === 'Z' ? undefined : fields[19];
}

/** The marker files of one deployment in one deployed dir. */
export class DeploymentMarkers {
  /** `<dir>/<id>.json`: written last. */
  readonly deployedPath: string;
  /** `<dir>/<id>.running`: the deployment file handed to heat-config-notify. */
  readonly runningPath: string;
  /** `<dir>/<id>.notify.json`: the result, kept for operators. */
  readonly notifyPath: string;
  /** `<dir>/.<id>.hook`: the running hook's pid and start time. */
  readonly hookPath: string;

  constructor(dir: string, id: string) {
    this.deployedPath = join(dir, `${id}.json`);
    this.runningPath = join(dir, `${id}.running`);
    this.notifyPath = join(dir, `${id}.notify.json`);
    this.hookPath = join(dir, `.${id}.hook`);
  }

  /** Where the deployment stands, from which markers exist. */
  state(): DeploymentState {
    if (existsSync(this.deployedPath)) return 'deployed';
    if (!existsSync(this.runningPath)) return 'new';
    return existsSync(this.notifyPath) ? 'result-pending' : 'interrupted';
  }

  /** Before the hook starts: drops a result left from an earlier run, then records the deployment as running. */
  async markRunning(deployment: unknown): Promise<void> {
    await rm(this.notifyPath, { force: true });
    await rm(this.hookPath, { force: true });
    await writeFileAtomic(this.runningPath, pythonJson(deployment), { mode: 0o600 });
  }

  /**
   * Records the hook's process. Nothing is recorded for a hook that has exited already. The record is
   * replaced whole, never rewritten in place, so a heat-config killed mid-write leaves the next run the
   * old record or the new one, not a torn one (its temp file is removed by the next run); the fsyncs
   * cost about a millisecond per hook started.
   */
  recordHook(pid: number): void {
    const startTime = processStartTime(pid);
    if (startTime !== undefined) writeFileAtomicSync(this.hookPath, JSON.stringify({ pid, startTime }), { mode: 0o600 });
  }

  /**
   * The pid of the hook recorded by recordHook while that very process still runs (a pid handed out again
   * has another start time); undefined otherwise, also when the record is missing or damaged.
   */
  liveHook(): number | undefined {
    try {
      const { pid, startTime } = JSON.parse(readFileSync(this.hookPath, 'utf8')) as { pid?: unknown; startTime?: unknown };
      if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0 || typeof startTime !== 'string') return undefined;
      return processStartTime(pid) === startTime ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Writes the running marker again when it holds no JSON object (damaged by a crash: a power loss on a disk
   * that lost its cache), since heat-config-notify reads the deployment from it. Returns whether it did.
   */
  async repairRunning(deployment: unknown): Promise<boolean> {
    try {
      const parsed: unknown = JSON.parse(await readFile(this.runningPath, 'utf8'));
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return false;
    } catch {
      // Unreadable or not JSON: written again below.
    }
    await writeFileAtomic(this.runningPath, pythonJson(deployment), { mode: 0o600 });
    return true;
  }

  /** The hook's result, durably, before heat-config-notify runs. */
  async saveResult(signal: unknown): Promise<void> {
    await writeFileAtomic(this.notifyPath, pythonJson(signal), { mode: 0o600 });
  }

  /** The result saved by saveResult, or undefined when it is unreadable. */
  async readResult(): Promise<Record<string, unknown> | undefined> {
    try {
      const parsed: unknown = JSON.parse(await readFile(this.notifyPath, 'utf8'));
      return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }

  /** After heat-config-notify took the result: `<id>.json`, then the running marker goes. */
  async markDeployed(deployment: unknown): Promise<void> {
    await writeFileAtomic(this.deployedPath, pythonJson(deployment), { mode: 0o600 });
    await this.clearRunning();
  }

  /** Removes a running marker (left beside `<id>.json` by a crash between the two steps of markDeployed). */
  async clearRunning(): Promise<void> {
    await rm(this.runningPath, { force: true });
    await rm(this.hookPath, { force: true });
  }
}

/**
 * Makes sure the deployed dir exists, as 55-heat-config does: moves the old dir (/var/run/heat-config/deployed)
 * there when it exists, else creates it 0700. Returns what it did, for the log.
 */
export function ensureDeployedDir(dir: string, oldDir: string): 'exists' | 'migrated' | 'created' {
  if (existsSync(dir) && statSync(dir).isDirectory()) return 'exists';
  if (dir !== oldDir && existsSync(oldDir) && statSync(oldDir).isDirectory()) {
    mkdirSync(join(dir, '..'), { recursive: true, mode: 0o755 });
    try {
      renameSync(oldDir, dir);
    } catch (error) {
      // /var/run is usually a tmpfs: move across filesystems as shutil.move does, by copying.
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
      cpSync(oldDir, dir, { recursive: true, preserveTimestamps: true });
      rmSync(oldDir, { recursive: true, force: true });
    }
    return 'migrated';
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  return 'created';
}

// After `hearth-agent install`: would the guest find the agent's commands? The units run /usr/bin/NAME, but
// os-collect-config's `command = os-refresh-config`, os-refresh-config's phases (os-apply-config, heat-config) and
// an operator's shell look the commands up by name on PATH, where another os-collect-config (pip's in
// /usr/local/bin) can come first. Everything is looked at inside root, as the guest sees it.
import { lstatSync, readFileSync, readlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { insideRoot } from './inside-root.ts';

/** The PATH systemd gives services and root's login shell has on Debian and Ubuntu, in lookup order. */
export const DEFAULT_PATH: readonly string[] = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/** The agent's units, whose ExecStart= must name a program that is there. */
const UNITS = ['os-collect-config.service', 'heat-config-notify.service', 'cfn-hup.service'];

/** Where systemd reads units from, most specific first. */
const UNIT_DIRS = ['/etc/systemd/system', '/usr/lib/systemd/system', '/lib/systemd/system'];

/** `guestPath` as a path on this machine: under root, with the guest's symlinks followed inside it. */
function hostPath(root: string, guestPath: string): string {
  const dir = insideRoot(root, join(root, dirname(guestPath))) ?? join(root, dirname(guestPath));
  return join(dir, basename(guestPath));
}

/** True when a shell would run `path` and it is not hearth-agent: not a directory, a non-executable file or a link to an agent. */
function isOtherCommand(path: string): boolean {
  try {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) return !basename(readlinkSync(path)).startsWith('hearth-agent');
    return !stat.isDirectory() && (stat.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

/** True when anything (a dangling link too) is at `path`. */
function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** The program of each ExecStart= line of the unit at `guestPath`; none when it is missing or no file (masked). */
function execStarts(root: string, guestPath: string): string[] {
  const file = insideRoot(root, join(root, guestPath));
  let text: string;
  try {
    if (file === undefined || !lstatSync(file).isFile()) return [];
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return [...text.matchAll(/^ExecStart=[-@:+!]*(\S+)/gm)].map((match) => match[1]!);
}

/**
 * What would keep the guest in `root` from running hearth-agent's `commands`, linked in `binDir` (a guest path) to
 * `agentPath`: each a sentence saying what to do. Empty when all is well.
 */
export function findProblems(root: string, binDir: string, commands: readonly string[], agentPath: string): string[] {
  const problems: string[] = [];
  const path = DEFAULT_PATH.join(':');
  if (!exists(hostPath(root, agentPath)))
    problems.push(`${agentPath} is not there yet: every command link points at it; put hearth-agent there`);
  const ownDir = insideRoot(root, join(root, binDir));
  const dirs = DEFAULT_PATH.map((guest) => ({ guest, host: insideRoot(root, join(root, guest)) }));
  const ownIndex = dirs.findIndex((dir) => dir.host === ownDir);
  if (ownIndex < 0) {
    problems.push(
      `${binDir} is not on the default PATH (${path}), where the collector (command = os-refresh-config), the refresh ` +
        'phases (os-apply-config, heat-config) and an operator look the commands up by name: ' +
        'install with --prefix /usr, or link the commands into a directory on that PATH',
    );
  } else {
    const seen = new Set<string | undefined>([ownDir]);
    for (const dir of dirs.slice(0, ownIndex)) {
      if (seen.has(dir.host)) continue;
      seen.add(dir.host);
      const shadowing = commands.filter((name) => isOtherCommand(join(dir.host ?? join(root, dir.guest), name)));
      if (shadowing.length === 0) continue;
      problems.push(
        `${dir.guest} has its own ${shadowing.join(', ')}, found before ${binDir} on the default PATH (${path}): ` +
          `the collector, the refresh phases and an operator's shell run those, not hearth-agent; ` +
          'remove them (a pip-installed os-collect-config: pip uninstall os-collect-config) or move them aside',
      );
    }
  }
  for (const unit of UNITS) {
    const file = UNIT_DIRS.map((dir) => join(dir, unit)).find((guestPath) => exists(hostPath(root, guestPath)));
    if (file === undefined) continue;
    for (const program of execStarts(root, file)) {
      if (program.startsWith('/') && !exists(hostPath(root, program))) {
        problems.push(
          `${unit} runs ${program}, which is not there: edit its ExecStart= to ${binDir}/${basename(program)} (or install with --prefix /usr)`,
        );
      }
    }
  }
  return problems;
}

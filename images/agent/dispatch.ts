// hearth-agent's entry: one executable, many commands. It runs the command it is called as (a symlink named
// cfn-signal runs cfn-signal), or the one named by its first argument (`hearth-agent cfn-signal ...`), or a hook
// (`hearth-agent hook script`), or one of its own (clean, install, secret). Only the chosen command's module is loaded.
import { basename } from 'node:path';
import { ExitError, runMain } from '@hearth/agent-kit/exit';
import { cleanMain } from './clean.ts';
import { BUILTINS, type AgentTable, type CommandLoader } from './commands.ts';
import { installMain } from './install.ts';

/** The oldest Node.js the agents are built and tested for (the repository's `engines`). */
export const MIN_NODE = [20, 19] as const;

/**
 * Why this Node.js cannot run hearth-agent, or undefined when it can. A guest's distribution node may be older
 * (Debian 12 ships 18): the agents would fail later and obscurely, mid-deployment, so they refuse to start.
 */
export function unsupportedNode(version: string): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map((part) => Number.parseInt(part, 10) || 0);
  if (major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1])) return undefined;
  return (
    `hearth-agent needs Node.js ${MIN_NODE.join('.')} or newer, and ${process.execPath} is ${version}: ` +
    'install a newer node, or use the self-contained hearth-agent executable, which carries its own'
  );
}

/** True for the names hearth-agent answers to as itself: hearth-agent, hearth-agent.cjs, a versioned copy like hearth-agent-0.1. */
function isSelfName(name: string): boolean {
  return name === '' || name.startsWith('hearth-agent');
}

/** `hearth-agent --help`: every command and hook this build holds. */
export function helpText(table: AgentTable): string {
  return `usage: hearth-agent COMMAND [ARGS...]    (or call it through a link named COMMAND)
       hearth-agent hook GROUP < deployment.json
       hearth-agent clean [--dry-run] [--keep-config]
       hearth-agent install [--root DIR] [--prefix DIR]
       hearth-agent secret [--backend file|keyring] set NAME < FILE | list | delete NAME
       hearth-agent --version | --help

commands: ${Object.keys(table.commands).join(' ')}
hooks: ${Object.keys(table.hooks).join(' ')}
built in: ${BUILTINS.join(' ')}
`;
}

/** `hearth-agent --version`: the version, then the commands it holds. */
export function versionText(table: AgentTable): string {
  return `hearth-agent ${table.version}\ncommands: ${Object.keys(table.commands).join(' ')}\nhooks: ${Object.keys(table.hooks).join(' ')}\n`;
}

/** Loads a command's module (which runs it); a module that fails to load exits 1 with its error. */
function start(load: CommandLoader): void {
  load().catch((error: unknown) => finish(() => Promise.reject(error instanceof Error ? error : new Error(String(error)))));
}

/** Runs `task` through runMain so that the exit and its flushing stay in one place. */
function finish(task: () => Promise<number>): void {
  runMain(task, { argv: [] });
}

/**
 * Chooses and starts the command for `argv` (default process.argv). A package command reads its arguments from
 * process.argv, so the dispatching words (the command name, `hook GROUP`) are taken out of it first.
 */
export function dispatch(table: AgentTable, argv: string[] = process.argv): void {
  const tooOld = unsupportedNode(process.versions.node);
  if (tooOld !== undefined) return finish(() => Promise.reject(new ExitError(1, tooOld)));
  const calledAs = basename(argv[1] ?? '');
  const command = table.commands[calledAs];
  if (command) {
    start(command);
    return;
  }
  if (!isSelfName(calledAs)) {
    const hint = `hearth-agent: called as ${JSON.stringify(calledAs)}, which is not one of its commands; see hearth-agent --help`;
    return finish(() => Promise.reject(new ExitError(2, hint)));
  }
  const [first, ...rest] = argv.slice(2);
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    return finish(async () => {
      (first === undefined ? process.stderr : process.stdout).write(helpText(table));
      return first === undefined ? 2 : 0;
    });
  }
  if (first === '--version' || first === '-V') {
    return finish(async () => {
      process.stdout.write(versionText(table));
      return 0;
    });
  }
  if (first === 'clean') return finish(() => cleanMain(rest));
  // Loaded only when used: the other commands do not pay for the secret store's modules.
  if (first === 'secret') return finish(async () => (await import('@hearth/agent-kit/secret-store-command')).secretMain(rest));
  if (first === 'install') return finish(() => installMain(rest, Object.keys(table.commands), Object.keys(table.hooks)));
  if (first === 'hook') {
    const group = rest[0] ?? '';
    const hook = table.hooks[group];
    if (!hook) {
      const known = Object.keys(table.hooks).join(', ');
      return finish(() =>
        Promise.reject(new ExitError(2, `hearth-agent: no hook group ${JSON.stringify(group)}; this build has: ${known}`)),
      );
    }
    argv.splice(2, 2);
    start(hook);
    return;
  }
  const chosen = table.commands[first];
  if (!chosen) {
    return finish(() => Promise.reject(new ExitError(2, `hearth-agent: unknown command ${JSON.stringify(first)}\n${helpText(table)}`)));
  }
  argv.splice(2, 1);
  start(chosen);
}

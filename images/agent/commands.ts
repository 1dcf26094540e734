// The multi-call table: which agent command each name runs, and how a launcher finds it.

/** Loads one command's module; importing it runs the command (its bin calls runMain). */
export type CommandLoader = () => Promise<unknown>;

/** What the build puts into hearth-agent: a loader per command name and per hook group. */
export interface AgentTable {
  /** hearth-agent's version string, e.g. `0.1.0 (abc1234)`. */
  version: string;
  /** Command name (os-collect-config, cfn-signal, ...) -> loader. */
  commands: Readonly<Record<string, CommandLoader>>;
  /** Hook group (script, ansible, ...) -> loader. */
  hooks: Readonly<Record<string, CommandLoader>>;
}

/** Commands hearth-agent implements itself rather than loading from a package. */
export const BUILTINS = ['clean', 'install', 'hook', 'secret'] as const;

/** Where the image puts the executable and its links. Default install prefix /usr. */
export const DEFAULT_PREFIX = '/usr';

/** `text` as one sh word: single-quoted, each `'` written as `'\''`. */
function shellWord(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** The launcher heat-config runs for one hook group: a shell script, so it works with no link magic. */
export function hookLauncher(agentPath: string, group: string): string {
  // Quoted: an agent path with a space or a `$` (--agent) must reach exec as one word, unexpanded.
  return `#!/bin/sh\n# heat-config hook "${group}", served by hearth-agent.\nexec ${shellWord(agentPath)} hook ${group} "$@"\n`;
}

import { HearthApiError, HearthConnectionError } from '@hearth/client';
import { CommanderError } from 'commander';
import { EXIT, ExitError, type ExitCode } from './errors.ts';
import { escapeControls } from './terminal-text.ts';

/** What `hearth` says about a failure and how it exits. */
export interface ErrorReport {
  exitCode: ExitCode;
  /** Lines for stderr, each already prefixed with `hearth: `. */
  lines: string[];
}

/** Facts the hints need: the URL in use, and which credential the failed call carried. */
export interface ReportContext {
  url: string;
  /** The credential the failed call carried: 'agent' for a server's (`metrics put`). Default: the admin token. */
  credential?: 'operator' | 'agent' | undefined;
}

/** Where a server's agent credential comes from. */
const AGENT_TOKEN = "a server's agent credential token (access_key:secret, printed once by `hearth server create`)";

/** What to try for a catalogue code, if `hearth` knows something more useful than the server's message. */
export function hintFor(code: string, context: ReportContext): string | undefined {
  switch (code) {
    case 'ERR_AUTH_MISSING':
    case 'ERR_AUTH_INVALID':
      if (context.credential === 'agent') return `this command sends ${AGENT_TOKEN}: pass it with --token or HEARTH_TOKEN`;
      return 'set HEARTH_TOKEN to the admin token (see <data-dir>/admin-token on the hearth-server host), or pass --token';
    case 'ERR_AUTH_FORBIDDEN':
      if (context.credential === 'agent') return `this command sends ${AGENT_TOKEN}, not the admin token: pass it with --token`;
      return 'use the admin token (HEARTH_TOKEN), not an agent credential';
    case 'ERR_CONNECTION':
      return `start hearth-server, or set HEARTH_URL (or --url; now ${context.url}) to the address it listens on`;
    case 'ERR_TIMEOUT':
      return `something at ${context.url} accepted the connection but did not answer: check hearth-server's health and logs, or that HEARTH_URL (or --url) points at it`;
    case 'ERR_PROJECT_NOT_FOUND':
      return 'check HEARTH_PROJECT (or --project)';
    case 'ERR_SERVER_NOT_FOUND':
      return 'see the registered servers with `hearth server list`';
    case 'ERR_CONFIG_NOT_FOUND':
      return 'see the configs with `hearth config list`';
    case 'ERR_DEPLOYMENT_NOT_FOUND':
      return 'see the deployments with `hearth deployment list`';
    case 'ERR_CONFIG_IN_USE':
      return 'delete its deployments first (`hearth deployment list`, `hearth deployment delete ID`)';
    case 'ERR_STACK_NOT_FOUND':
      return 'see the stacks with `hearth stack list`';
    case 'ERR_STACK_EXISTS':
      return 'pick another name, or see it with `hearth stack show NAME`';
    case 'ERR_STACK_NOT_EMPTY':
      return 'delete its servers, deployments and scaling groups first (`hearth server delete ID`, `hearth deployment delete ID`, `hearth scaling-group delete NAME`)';
    case 'ERR_RESOURCE_EXISTS':
      return 'pick another name: servers, deployments and wait conditions share one namespace per stack';
    case 'ERR_WAIT_CONDITION_NOT_FOUND':
      return "see the stack's wait conditions with `hearth waitcondition list --stack STACK`";
    case 'ERR_ALARM_NOT_FOUND':
      return 'see the alarms with `hearth alarm list`';
    case 'ERR_SCALING_GROUP_NOT_FOUND':
      return "see the stack's scaling groups with `hearth scaling-group list --stack STACK`";
    case 'ERR_SCALING_POLICY_NOT_FOUND':
      return "see the stack's scaling policies with `hearth scaling-policy list --stack STACK`";
    case 'ERR_EVENT_CURSOR_EXPIRED':
      return "hearth-server's events retention deleted events after that cursor: start again from the cursor the message names (those events are lost)";
    case 'ERR_WAIT_CONDITION_DONE':
      return 'create a new wait condition to wait again';
    case 'ERR_ROUTE_NOT_FOUND': {
      // A base URL copied with its /v1 (or another path) doubles the prefix of every call.
      const path = URL.canParse(context.url) ? new URL(context.url).pathname : '/';
      if (path !== '/') return `HEARTH_URL (or --url) is ${context.url}: give hearth-server's base URL, without ${path}`;
      return `is hearth-server at ${context.url} as recent as this hearth (\`hearth --version\`)?`;
    }
    case 'ERR_RESPONSE_INVALID':
      return `hearth is using ${context.url}: is that hearth-server?`;
    default:
      return undefined;
  }
}

/**
 * Formats a message, its code and its hint as stderr lines, with control characters escaped: they
 * can carry text from the server or a VM (a status reason, a name in a server's message).
 */
function lines(message: string, code: string | undefined, hint: string | undefined): string[] {
  const out: string[] = [];
  if (message !== '') out.push(escapeControls(`hearth: ${message}${code === undefined ? '' : ` (${code})`}`));
  if (hint !== undefined) out.push(escapeControls(`hearth: hint: ${hint}`));
  return out;
}

/** Maps any error a command can throw to its exit code and stderr lines. */
export function describeError(error: unknown, context: ReportContext): ErrorReport {
  if (error instanceof ExitError) {
    return { exitCode: error.exitCode, lines: lines(error.message, error.code, error.hint) };
  }
  if (error instanceof HearthConnectionError) {
    // A connection made and then cut is not a server to start.
    const cut = error.causeCode === 'EPIPE' || error.causeCode === 'ECONNRESET';
    const hint = cut ? "check hearth-server's log; if it runs, send a smaller body (see its limits)" : hintFor(error.code, context);
    return { exitCode: EXIT.UNAVAILABLE, lines: lines(error.message, error.code, hint) };
  }
  if (error instanceof HearthApiError) {
    const status = error.status > 0 ? `HTTP ${error.status}, ` : '';
    const hint = hintFor(error.code, { ...context, credential: error.credential });
    return { exitCode: EXIT.FAILED, lines: lines(error.message, `${status}${error.code}`, hint) };
  }
  if (error instanceof CommanderError) {
    // commander has printed its own message through the output configured in program.ts.
    const ok = error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.exitCode === 0;
    return { exitCode: ok ? EXIT.OK : EXIT.USAGE, lines: [] };
  }
  const message = error instanceof Error ? error.message : String(error);
  return {
    exitCode: EXIT.FAILED,
    lines: lines(`unexpected error: ${message}`, undefined, 'this is a bug in hearth; please report it with the command you ran'),
  };
}

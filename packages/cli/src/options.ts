import { tokenProblem } from '@hearth/client';
import { EXIT, ExitError, usageError } from './errors.ts';
import { PROJECT_ID_PATTERN } from './protocol-values.ts';

/** Default hearth-server URL when neither --url nor HEARTH_URL is given. */
export const DEFAULT_URL = 'http://127.0.0.1:8000';
/** Default project when neither --project nor HEARTH_PROJECT is given. */
export const DEFAULT_PROJECT = 'default';

/** The global flags as commander hands them over. */
export interface GlobalFlags {
  url?: string | undefined;
  token?: string | undefined;
  project?: string | undefined;
  json?: boolean | undefined;
}

/** Where a setting came from, for messages. */
export type SettingSource = 'flag' | 'env' | 'default';

/** Settings every command runs with. */
export interface GlobalOptions {
  /** hearth-server base URL, without trailing slash. */
  url: string;
  /** Admin token; undefined when none was given (commands then stop with a hint). */
  token: string | undefined;
  /** Project id. */
  project: string;
  /** Machine output: one JSON document on stdout. */
  json: boolean;
  /** Where url, token and project came from. */
  sources: { url: SettingSource; token: SettingSource; project: SettingSource };
}

/** Result of resolving global options: usable options, or the problems found. */
export interface ResolvedOptions {
  options: GlobalOptions;
  errors: string[];
}

/** Picks a flag, else an environment variable, else a default, noting which. */
function pick(flag: string | undefined, env: string | undefined, fallback: string | undefined): [string | undefined, SettingSource] {
  if (flag !== undefined) return [flag, 'flag'];
  if (env !== undefined && env !== '') return [env, 'env'];
  return [fallback, 'default'];
}

/** Resolves --url/--token/--project/--json against HEARTH_URL, HEARTH_TOKEN, HEARTH_PROJECT: parse, normalize, validate. */
export function resolveGlobalOptions(flags: GlobalFlags, env: Readonly<Record<string, string | undefined>>): ResolvedOptions {
  const [rawUrl, urlSource] = pick(flags.url, env.HEARTH_URL, DEFAULT_URL);
  const [rawToken, tokenSource] = pick(flags.token, env.HEARTH_TOKEN, undefined);
  const [rawProject, projectSource] = pick(flags.project, env.HEARTH_PROJECT, DEFAULT_PROJECT);

  const url = (rawUrl ?? DEFAULT_URL).trim().replace(/\/+$/, '');
  const token = rawToken?.trim() === '' ? undefined : rawToken?.trim();
  const project = (rawProject ?? DEFAULT_PROJECT).trim();

  const errors: string[] = [];
  const urlName = urlSource === 'flag' ? '--url' : 'HEARTH_URL';
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    errors.push(`${urlName} ${JSON.stringify(url)} is not a URL; use e.g. ${DEFAULT_URL}`);
  }
  if (parsed && parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    errors.push(`${urlName} ${JSON.stringify(url)} must start with http:// or https://`);
  } else if (parsed && /[?#]/.test(url)) {
    // API paths are appended to the base URL: after a '?' or '#' they would be a query or fragment.
    const base = `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}`;
    errors.push(`${urlName} ${JSON.stringify(url)} has a query or fragment: give hearth-server's base URL, e.g. ${base}`);
  }
  const badToken = token === undefined ? undefined : tokenProblem(token);
  if (badToken !== undefined) errors.push(`${tokenSource === 'flag' ? '--token' : 'HEARTH_TOKEN'} ${badToken}`);
  if (!PROJECT_ID_PATTERN.test(project)) {
    const projectName = projectSource === 'flag' ? '--project' : 'HEARTH_PROJECT';
    errors.push(`${projectName} ${JSON.stringify(project)} is not a project id: use 1-64 letters, digits, '_', '.' or '-'`);
  }
  return {
    options: { url, token, project, json: flags.json === true, sources: { url: urlSource, token: tokenSource, project: projectSource } },
    errors,
  };
}

/** Resolves global options and throws a usage ExitError (64) listing every problem. */
export function globalOptionsOrThrow(flags: GlobalFlags, env: Readonly<Record<string, string | undefined>>): GlobalOptions {
  const { options, errors } = resolveGlobalOptions(flags, env);
  if (errors.length > 0) throw usageError(errors.join('; '));
  return options;
}

/** The admin token, or an ExitError (64) saying how to give one. */
export function requireToken(options: GlobalOptions): string {
  if (options.token !== undefined) return options.token;
  throw new ExitError(EXIT.USAGE, 'no admin token given', {
    code: 'ERR_AUTH_MISSING',
    hint: 'set HEARTH_TOKEN to the admin token (see <data-dir>/admin-token on the hearth-server host), or pass --token',
  });
}

// Where the CFN API is: `--url`, or heat-cfntools' files under /var/lib/heat-cfntools: the host from
// cfn-boto-cfg's `[Boto] cfn_region_endpoint`, the port from the URL in cfn-metadata-server. Unlike the
// original, a URL ending in `/v1/` (what Heat writes) keeps its port, and `is_secure = 1` means HTTPS.
// cfn-push-stats takes its host from `cloudwatch_region_endpoint` instead, as boto's CloudWatchConnection does.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExitError } from '@hearth/agent-kit/exit';
import { iniValue, parseIni } from '@hearth/agent-kit/ini';
import type { AgentPaths } from '@hearth/agent-kit/paths';

/** The port the original falls back to when cfn-metadata-server gives none. */
export const DEFAULT_CFN_PORT = 8000;
/** The CloudWatch-compatible port cfn-push-stats sends PutMetricData to. */
export const DEFAULT_CLOUDWATCH_PORT = 8003;
/** The API path boto uses. */
export const CFN_API_PATH = '/v1/';

/** A resolved CFN API base URL and how to talk to it. */
export interface CfnEndpoint {
  /** Base URL ending in `/`, e.g. `http://heat.example.com:8000/v1/`. */
  url: string;
  /** Skip TLS verification (`https_validate_certificates = 0` in cfn-boto-cfg, or `-k`). */
  insecure: boolean;
  /** What it was taken from: `--url` or the files read. */
  origin: string;
}

/** `<heatCfntoolsDir>/cfn-boto-cfg`. */
export function botoConfigFile(paths: Pick<AgentPaths, 'heatCfntoolsDir'>): string {
  return join(paths.heatCfntoolsDir, 'cfn-boto-cfg');
}

/** The `[Boto]` settings heat-cfntools reads, as written by Heat. */
export interface BotoConfig {
  /** `cfn_region_endpoint`. */
  endpointHost: string | undefined;
  /** `cloudwatch_region_endpoint`: Heat writes the host of its CloudWatch API (heat_watch_server_url) here. */
  cloudwatchEndpointHost: string | undefined;
  isSecure: boolean;
  validateCertificates: boolean;
}

function truthy(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value.trim() === '') return fallback;
  return /^(1|true|yes|on)$/i.test(value.trim());
}

function readOptional(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ExitError(1, `cannot read ${path}: ${(error as Error).message}`);
  }
}

/** Reads cfn-boto-cfg; undefined when the file does not exist. */
export function readBotoConfig(path: string): BotoConfig | undefined {
  const text = readOptional(path);
  if (text === undefined) return undefined;
  // boto reads this file with Python's ConfigParser, which keeps quotes.
  const doc = parseIni(text, path, { stripQuotes: false });
  const host = (key: string): string | undefined => iniValue(doc, 'Boto', key)?.trim() || undefined;
  return {
    endpointHost: host('cfn_region_endpoint'),
    cloudwatchEndpointHost: host('cloudwatch_region_endpoint'),
    isSecure: truthy(iniValue(doc, 'Boto', 'is_secure'), false),
    validateCertificates: truthy(iniValue(doc, 'Boto', 'https_validate_certificates'), true),
  };
}

/** The parts of the cfn-metadata-server URL: scheme, host and port when it names them. */
export interface MetadataServerHint {
  text: string;
  protocol: 'http:' | 'https:' | undefined;
  host: string | undefined;
  port: number | undefined;
}

/** Parses the content of cfn-metadata-server (`http://host:8000/v1/`, or the original's `http://host:8000`). */
export function parseMetadataServerHint(text: string): MetadataServerHint {
  const trimmed = text.trim().replace(/\/+$/, '');
  let url: URL | undefined;
  try {
    url = new URL(trimmed);
  } catch {
    url = undefined;
  }
  if (url !== undefined && (url.protocol === 'http:' || url.protocol === 'https:')) {
    return { text: trimmed, protocol: url.protocol, host: url.hostname || undefined, port: url.port === '' ? undefined : Number(url.port) };
  }
  const port = /:(\d+)$/.exec(trimmed)?.[1];
  return { text: trimmed, protocol: undefined, host: undefined, port: port === undefined ? undefined : Number(port) };
}

/** Options of resolveCfnEndpoint. */
export interface ResolveEndpointOptions {
  /** `--url`: used as given; a URL with no path gets `/v1/`. */
  url?: string | undefined;
  /** Port when the files name none. Default 8000 (cfn-push-stats: 8003, always, as the original). */
  port?: number;
  /** Force this port even if the files name one (cfn-push-stats). Default false. */
  forcePort?: boolean;
  /** `-k/--insecure`. Default false. */
  insecure?: boolean;
  /** Which API's host: `cloudwatch` prefers `cloudwatch_region_endpoint`, then the CFN host. Default `cfn`. */
  service?: 'cfn' | 'cloudwatch';
}

/** Checks and completes a `--url`; throws ExitError(2) when it is not an absolute http(s) URL. */
export function normalizeEndpointUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ExitError(2, `--url '${text}' is not an absolute URL; give e.g. http://heat.example.com:8000/v1/`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ExitError(2, `--url '${text}' must be http:// or https://`);
  if (url.pathname === '/' || url.pathname === '') url.pathname = CFN_API_PATH;
  return url.toString();
}

/**
 * The CFN endpoint: `--url` when given, else built from cfn-boto-cfg and cfn-metadata-server; undefined
 * when neither file names a host (the caller then falls back to local metadata).
 */
export function resolveCfnEndpoint(
  paths: Pick<AgentPaths, 'heatCfntoolsDir' | 'cfnMetadataHintFile'>,
  options: ResolveEndpointOptions = {},
): CfnEndpoint | undefined {
  if (options.url !== undefined && options.url !== '') {
    return { url: normalizeEndpointUrl(options.url), insecure: options.insecure ?? false, origin: '--url' };
  }
  const botoFile = botoConfigFile(paths);
  const boto = readBotoConfig(botoFile);
  const hintText = readOptional(paths.cfnMetadataHintFile);
  const hint = hintText === undefined ? undefined : parseMetadataServerHint(hintText);
  const cloudwatchHost = options.service === 'cloudwatch' ? boto?.cloudwatchEndpointHost : undefined;
  const host = cloudwatchHost ?? boto?.endpointHost ?? hint?.host;
  if (host === undefined) return undefined;
  const secure = boto?.isSecure === true || hint?.protocol === 'https:';
  const fallbackPort = options.port ?? DEFAULT_CFN_PORT;
  const port = options.forcePort ? fallbackPort : (hint?.port ?? fallbackPort);
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const origins = [
    cloudwatchHost !== undefined || boto?.endpointHost !== undefined ? botoFile : undefined,
    hint !== undefined ? paths.cfnMetadataHintFile : undefined,
  ];
  return {
    url: `${secure ? 'https' : 'http'}://${bracketed}:${port}${CFN_API_PATH}`,
    insecure: (options.insecure ?? false) || boto?.validateCertificates === false,
    origin: origins.filter((origin) => origin !== undefined).join(' + '),
  };
}

// This machine's identity for cfn-signal's UniqueId and cfn-push-stats' InstanceId dimension. Unlike the
// original, nothing asks the cloud metadata address unless configured: the cached nova_meta.json, then a
// URL named by HEARTH_CFN_INSTANCE_ID_URL, then the host name.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { AgentPaths } from '@hearth/agent-kit/paths';
import type { HttpFunction } from './describe-stack-resource.ts';

/** Env var naming a URL that answers nova's meta_data.json (`{"uuid": ...}`) or a plain-text id. Default unset: not asked. */
export const INSTANCE_ID_URL_ENV = 'HEARTH_CFN_INSTANCE_ID_URL';

/** `<heatCfntoolsDir>/nova_meta.json`: the original's cache of nova's meta_data.json. */
export function novaMetaFile(paths: Pick<AgentPaths, 'heatCfntoolsDir'>): string {
  return join(paths.heatCfntoolsDir, 'nova_meta.json');
}

/** Nova's meta_data.json fields cfn-tools use. */
export interface NovaMeta {
  uuid?: string;
  meta?: Record<string, string>;
}

/** The cached nova_meta.json, or undefined when absent or not a JSON object. */
export function readNovaMeta(paths: Pick<AgentPaths, 'heatCfntoolsDir'>): NovaMeta | undefined {
  try {
    const value = JSON.parse(readFileSync(novaMetaFile(paths), 'utf8')) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Options of resolveInstanceId. */
export interface ResolveInstanceIdOptions {
  paths: Pick<AgentPaths, 'heatCfntoolsDir'>;
  env?: NodeJS.ProcessEnv;
  /** Needed only when INSTANCE_ID_URL_ENV is set; loaded lazily otherwise. */
  http?: HttpFunction;
  /** For the configured URL. Default 3000 ms. */
  timeoutMs?: number;
}

/** The instance id and where it came from. */
export interface InstanceId {
  id: string;
  source: 'nova_meta.json' | 'url' | 'hostname';
}

/** The instance id: nova_meta.json's uuid, else the configured URL's answer, else the host name (never 169.254.169.254 by default). */
export async function resolveInstanceId(options: ResolveInstanceIdOptions): Promise<InstanceId> {
  const uuid = readNovaMeta(options.paths)?.uuid;
  if (typeof uuid === 'string' && uuid !== '') return { id: uuid, source: 'nova_meta.json' };
  const url = (options.env ?? process.env)[INSTANCE_ID_URL_ENV];
  if (url) {
    const http = options.http ?? (await import('@hearth/agent-kit/http')).httpRequest;
    try {
      const response = await http({ url, timeoutMs: options.timeoutMs ?? 3000 });
      if (response.status === 200) {
        const text = response.text().trim();
        const id = text.startsWith('{') ? (JSON.parse(text) as NovaMeta).uuid : text;
        if (typeof id === 'string' && id !== '') return { id, source: 'url' };
      }
    } catch {
      // an unreachable or malformed source leaves the host name, as the original falls back to the FQDN
    }
  }
  return { id: hostname(), source: 'hostname' };
}

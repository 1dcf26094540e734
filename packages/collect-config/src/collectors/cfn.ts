// `cfn`: heat-api-cfn's DescribeStackResource, signed with EC2 signature v2 in the query (as the
// original's keystoneclient Ec2Signer does: no Timestamp), answered in XML whose `<Metadata>`
// text is JSON. Every `path` is read and the dicts shallow-merged, then exploded with `[cfn] deployment_key`.
import { signV2 } from '@hearth/protocol/signing';
import { existsSync, readFileSync } from 'node:fs';
import { isDict, parsePyJson, pyPlainData, type PyValue } from '@hearth/agent-kit/python-json';
import { explodeDeployments } from '../explode.ts';
import { childElement, parseXml } from '../xml.ts';
import { lookUpSecret, secretStoreConfig } from './stored-secret.ts';
import {
  notConfigured,
  seconds,
  setting,
  settings,
  unavailable,
  type Collector,
  type CollectOutcome,
  type CollectorContext,
} from './types.ts';

/** The parts of a URL the v2 string-to-sign takes, spelled as Python's urlparse gives them (netloc keeps an explicit default port). */
export function netlocAndPath(url: string): { netloc: string; path: string } {
  const match = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/([^/?#]*)([^?#]*)/.exec(url);
  if (!match) throw new Error(`not an absolute URL: ${url}`);
  return { netloc: match[1]!, path: match[2]! };
}

/** The EC2 signature v2 (HmacSHA256) of a GET with these query parameters, base64, as os-collect-config signs it. */
export function signV2Get(secret: string, url: string, params: Record<string, string>): string {
  const { netloc, path } = netlocAndPath(url);
  return signV2(secret, 'sha256', 'GET', netloc, path, params);
}

function metadataUrl(ctx: CollectorContext): string | undefined {
  const configured = setting(ctx.options, 'cfn', 'metadata_url');
  if (configured !== undefined) return configured;
  const hint = setting(ctx.options, 'cfn', 'heat_metadata_hint');
  if (hint !== undefined && existsSync(hint)) return `${readFileSync(hint, 'utf8').trim()}/v1/`;
  return undefined;
}

async function describe(
  ctx: CollectorContext,
  url: string,
  path: string,
  secret: string,
  ca: Buffer | undefined,
): Promise<Record<string, unknown> | string> {
  const [resource = '', field = '', ...subKeys] = path.split('.');
  const params: Record<string, string> = { Action: 'DescribeStackResource' };
  const stackName = setting(ctx.options, 'cfn', 'stack_name');
  if (stackName !== undefined) params.StackName = stackName;
  params.LogicalResourceId = resource;
  params.AWSAccessKeyId = setting(ctx.options, 'cfn', 'access_key_id')!;
  params.SignatureVersion = '2';
  params.SignatureMethod = 'HmacSHA256';
  params.Signature = signV2Get(secret, url, params);
  const requestUrl = `${url}${url.includes('?') ? '&' : '?'}${new URLSearchParams(params).toString()}`;
  const timeoutMs = seconds(ctx.options, 'cfn', 'timeout', 10) * 1000;
  const response = await ctx.http({
    method: 'GET',
    url: requestUrl,
    headers: { 'Content-Type': 'application/json' },
    timeoutMs,
    signal: ctx.signal,
    ...(ca ? { ca } : {}),
  });
  if (response.status < 200 || response.status > 299) return `DescribeStackResource answered ${response.status}`;
  let detail;
  try {
    detail = childElement(childElement(parseXml(response.text()), 'DescribeStackResourceResult'), 'StackResourceDetail');
  } catch (error) {
    return `the reply is not XML (${(error as Error).message})`;
  }
  if (!detail) return 'the reply has no DescribeStackResourceResult/StackResourceDetail';
  const element = childElement(detail, field);
  if (!element) return `Path ${path} does not exist.`;
  // Parsed as json.loads does, so floats and big integers reach the cache as the original writes them.
  let value: PyValue | undefined;
  try {
    value = parsePyJson(element.text);
  } catch (error) {
    return `Path ${path} failed to parse as json. (${(error as Error).message})`;
  }
  for (const key of subKeys) {
    value = isDict(value) ? value.get(key) : undefined;
    if (value === undefined) return `Sub-key ${key} does not exist. (${path})`;
  }
  if (!isDict(value)) return `Path ${path} is not a JSON object`;
  return pyPlainData(value) as Record<string, unknown>;
}

/** The `cfn` collector. */
export const cfnCollector: Collector = {
  name: 'cfn',
  async collect(ctx): Promise<CollectOutcome> {
    const url = metadataUrl(ctx);
    if (url === undefined) return notConfigured('No metadata_url configured.');
    const accessKeyId = setting(ctx.options, 'cfn', 'access_key_id');
    if (accessKeyId === undefined) return notConfigured('No Access Key ID configured.');
    if (setting(ctx.options, 'cfn', 'secret_access_key') === undefined && secretStoreConfig(ctx.options, 'cfn') === undefined)
      return notConfigured('No Secret Access Key configured.');
    const paths = settings(ctx.options, 'cfn', 'path')?.filter((path) => path !== '');
    if (paths === undefined || paths.length === 0) return notConfigured('No path configured');
    const bad = paths.find((path) => !path.includes('.'));
    if (bad !== undefined) return notConfigured(`Path not in format resource.field[.x.y] (${bad})`);
    const secret = await lookUpSecret(ctx.options, 'cfn', accessKeyId);
    if (secret.kind !== 'secret') return secret;
    // As the original's `verify=ca_certificate`: this bundle, not the system's, is trusted for https.
    const caFile = setting(ctx.options, 'cfn', 'ca_certificate');
    let ca: Buffer | undefined;
    try {
      ca = caFile === undefined ? undefined : readFileSync(caFile);
    } catch (error) {
      return unavailable(`[cfn] ca_certificate ${caFile} cannot be read (${(error as Error).message})`);
    }
    const merged: Record<string, unknown> = {};
    for (const path of paths) {
      let value;
      try {
        value = await describe(ctx, url, path, secret.secret, ca);
      } catch (error) {
        return unavailable((error as Error).message);
      }
      if (typeof value === 'string') return unavailable(value);
      Object.assign(merged, value);
    }
    const keys = settings(ctx.options, 'cfn', 'deployment_key') ?? ['deployments'];
    return { kind: 'data', outputs: explodeDeployments(merged, keys, 'cfn', ctx.log) };
  },
};

/** The parts of a Heat stack or resource ARN, each URL-unquoted. */
export interface ParsedArn {
  /** The project (Heat's tenant) that owns the stack. */
  project: string;
  stackName: string;
  stackId: string;
  /** The resource name for a resource ARN; `null` for a stack ARN. */
  resourceName: string | null;
}

const STACK_PATH = /^stacks\/([^/]+)\/([^/]+)(.*)$/s;
const RESOURCE_SUFFIX = /^\/resources\/([^/]+)$/s;
const ENCODED_PREFIX = '/arn%3aopenstack%3aheat%3a%3a';
const LITERAL_PREFIX = '/arn:openstack:heat::';

/**
 * Parses `arn:openstack:heat::{project}:stacks/{name}/{id}[/resources/{resource}]` as Heat does
 * (reference/server.md §1.2): `arn` in any case, `openstack`, `heat`, then each component URL-unquoted.
 * Returns null for anything else, including a path below the resource and malformed percent-encoding.
 */
export function parseArn(text: string): ParsedArn | null {
  const fields = text.split(':');
  if (fields.length < 6 || fields[0]?.toLowerCase() !== 'arn' || fields[1] !== 'openstack' || fields[2] !== 'heat') return null;
  const path = STACK_PATH.exec(fields.slice(5).join(':'));
  if (path === null) return null;
  const [, rawName = '', rawId = '', rest = ''] = path;
  let rawResource: string | null = null;
  if (rest !== '') {
    const resource = RESOURCE_SUFFIX.exec(rest);
    if (resource === null) return null;
    rawResource = resource[1] ?? '';
  }
  const project = unquote(fields[4] ?? '');
  const stackName = unquote(rawName);
  const stackId = unquote(rawId);
  const resourceName = rawResource === null ? null : unquote(rawResource);
  if (project === null || project === '' || stackName === null || stackId === null || (resourceName === null && rawResource !== null)) {
    return null;
  }
  return { project, stackName, stackId, resourceName };
}

/**
 * Finds the ARN in a request path, given percent-encoded the way Heat emits it
 * (`/v1/signal/arn%3Aopenstack%3Aheat%3A%3A...`, decoded once here) or literally (a path the router
 * already decoded). The query string is ignored. Returns the ARN text for parseArn, or null.
 */
export function arnFromPath(path: string): string | null {
  const query = path.indexOf('?');
  const bare = query === -1 ? path : path.slice(0, query);
  const lower = bare.toLowerCase();
  const literal = lower.indexOf(LITERAL_PREFIX);
  const encoded = lower.indexOf(ENCODED_PREFIX);
  if (literal !== -1 && (encoded === -1 || literal < encoded)) return bare.slice(literal + 1);
  if (encoded === -1) return null;
  return unquote(bare.slice(encoded + 1));
}

/** decodeURIComponent that answers null instead of throwing on malformed percent-encoding. */
function unquote(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/** Percent-encodes every character but `A-Za-z0-9_.-~`, as Python's `quote(s, safe='')` does for Heat's ARNs. */
function quote(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Builds a stack ARN: `arn:openstack:heat::{project}:stacks/{name}/{id}` (reference/server.md §1.2). */
export function stackArn(project: string, name: string, id: string): string {
  return `arn:openstack:heat::${quote(project)}:stacks/${quote(name)}/${quote(id)}`;
}

/** Builds a resource ARN: the stack ARN plus `/resources/{name}`. */
export function resourceArn(project: string, name: string, id: string, resource: string): string {
  return `${stackArn(project, name, id)}/resources/${quote(resource)}`;
}

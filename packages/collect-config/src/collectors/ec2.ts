// `ec2`: the EC2-style metadata tree, fetched once: the cached `ec2.json` if it holds something,
// else the config drive, else a crawl of `metadata_url` (one GET per entry, recursing on `name/`).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readConfigDrive } from './config-drive.ts';
import { parseJsonObject, seconds, setting, unavailable, type Collector, type CollectOutcome, type CollectorContext } from './types.ts';

const DEFAULT_URL = 'http://169.254.169.254/latest/meta-data';

async function fetchText(ctx: CollectorContext, url: string, timeoutMs: number): Promise<string> {
  const response = await ctx.http({ method: 'GET', url, timeoutMs, signal: ctx.signal });
  if (response.status < 200 || response.status > 299) throw new Error(`GET ${url} answered ${response.status}`);
  return response.text();
}

/**
 * How deep the crawl goes. The EC2 tree is a handful of levels deep; a URL that is not a metadata
 * service (a web server answering every path with the same page, whose `a=b` lines read as
 * directories) would otherwise be crawled until the URL grows too long for the server.
 */
const MAX_DEPTH = 16;

/** Crawls a metadata listing: `a=b` lines fetch `a/`, `x/` recurses, anything else is a text leaf. */
async function crawl(ctx: CollectorContext, url: string, timeoutMs: number, depth = 0): Promise<Record<string, unknown>> {
  if (depth > MAX_DEPTH) {
    throw new Error(`the metadata tree is deeper than ${MAX_DEPTH} levels: is [ec2] metadata_url an EC2-style metadata service?`);
  }
  const tree: Record<string, unknown> = {};
  const listing = await fetchText(ctx, url, timeoutMs);
  for (const raw of listing.split('\n')) {
    let entry = raw.trim();
    if (entry === '') continue;
    if (entry.includes('=')) entry = `${entry.split('=')[0]}/`;
    if (entry.endsWith('/')) tree[entry.slice(0, -1)] = await crawl(ctx, `${url}${entry}`, timeoutMs, depth + 1);
    else tree[entry] = await fetchText(ctx, `${url}${entry}`, timeoutMs);
  }
  return tree;
}

function cached(cachedir: string): Record<string, unknown> | undefined {
  const path = join(cachedir, 'ec2.json');
  if (!existsSync(path)) return undefined;
  try {
    const value = parseJsonObject(readFileSync(path, 'utf8'));
    return value !== undefined && Object.keys(value).length > 0 ? value : undefined;
  } catch {
    return undefined;
  }
}

/** A new `ec2` collector; `configDrive` is injectable so tests never probe block devices. */
export function createEc2Collector(configDrive: () => Record<string, unknown> | undefined = readConfigDrive): Collector {
  return {
    name: 'ec2',
    async collect(ctx): Promise<CollectOutcome> {
      const known = cached(ctx.options.cachedir) ?? configDrive();
      if (known !== undefined && Object.keys(known).length > 0) return { kind: 'data', outputs: [['ec2', known]] };
      const base = setting(ctx.options, 'ec2', 'metadata_url') ?? DEFAULT_URL;
      try {
        const tree = await crawl(ctx, `${base.replace(/\/+$/, '')}/`, seconds(ctx.options, 'ec2', 'timeout', 10) * 1000);
        return { kind: 'data', outputs: [['ec2', tree]] };
      } catch (error) {
        return unavailable((error as Error).message);
      }
    },
  };
}

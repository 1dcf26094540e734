// `request`: HEAD then GET one URL (usually a Swift temp URL), no auth. A Last-Modified not newer
// than the last one seen means "unchanged" (the original rebuilds its collector every pass, so it
// never remembers one; ours is built once and does).
import { explodeDeployments } from '../explode.ts';
import {
  jsonObject,
  notConfigured,
  seconds,
  setting,
  unavailable,
  type Collector,
  type CollectOutcome,
  type CollectorContext,
} from './types.ts';

/** Parses an RFC 1123 date (`%a, %d %b %Y %H:%M:%S %Z`) to epoch seconds, or undefined. */
export function parseHttpDate(text: string): number | undefined {
  const match = /^[A-Za-z]{3}, (\d{2}) ([A-Za-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) (GMT|UTC)$/.exec(text.trim());
  if (!match) return undefined;
  const month = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'].indexOf(match[2]!.toLowerCase());
  if (month < 0) return undefined;
  return Date.UTC(Number(match[3]), month, Number(match[1]), Number(match[4]), Number(match[5]), Number(match[6])) / 1000;
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** A new `request` collector (it remembers the last Last-Modified it fetched). */
export function createRequestCollector(): Collector {
  let lastModified: number | undefined;
  return {
    name: 'request',
    async collect(ctx: CollectorContext): Promise<CollectOutcome> {
      const url = setting(ctx.options, 'request', 'metadata_url');
      // The original reports this as "Unavailable" (a warning on every poll with the default collectors).
      if (url === undefined) return notConfigured('No metadata_url configured.');
      const timeoutMs = seconds(ctx.options, 'request', 'timeout', 10) * 1000;
      let seen: number | undefined;
      try {
        const head = await ctx.http({ method: 'HEAD', url, timeoutMs, signal: ctx.signal });
        const header = headerText(head.headers['last-modified']);
        if (header !== undefined && header !== '') {
          seen = parseHttpDate(header);
          if (seen === undefined) ctx.log.warn(`ignoring an unparsable Last-Modified: ${header}`);
          else if (lastModified !== undefined && seen <= lastModified) return { kind: 'unchanged', reason: 'Last-Modified is not newer' };
        }
        const response = await ctx.http({ method: 'GET', url, timeoutMs, signal: ctx.signal });
        if (response.status < 200 || response.status > 299) return unavailable(`GET answered ${response.status}`);
        const body = jsonObject(response.text());
        if (!body.ok) return unavailable(body.reason);
        lastModified = seen;
        return { kind: 'data', outputs: explodeDeployments(body.value, ctx.options.deploymentKeys, 'request', ctx.log) };
      } catch (error) {
        return unavailable((error as Error).message);
      }
    },
  };
}

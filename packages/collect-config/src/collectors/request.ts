// `request`: HEAD then GET one URL (usually a Swift temp URL), no auth. A Last-Modified not newer
// than the last one seen means "unchanged" (the original rebuilds its collector every pass, so it
// never remembers one; ours is built once and does). Only a Last-Modified that is safe to compare
// is remembered: HTTP dates have one-second resolution, so a document served within the second it
// was modified may be replaced in that same second without its Last-Modified changing.
import type { IncomingHttpHeaders } from 'node:http';
import { explodeDeployments } from '../explode.ts';
import { responseText } from './response-text.ts';
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

/**
 * The response's Last-Modified, in epoch seconds, when it is a strong validator (RFC 9110
 * §8.8.2.2): the response's Date is at least one second later, so any later change of the document
 * must carry a later Last-Modified. Undefined otherwise (no or unparsable headers, or same second).
 */
export function comparableLastModified(headers: IncomingHttpHeaders): number | undefined {
  const modified = parseHttpDate(headerText(headers['last-modified']) ?? '');
  const date = parseHttpDate(headerText(headers.date) ?? '');
  return modified !== undefined && date !== undefined && date - modified >= 1 ? modified : undefined;
}

/** A new `request` collector (it remembers the last comparable Last-Modified it fetched). */
export function createRequestCollector(): Collector {
  let lastModified: number | undefined;
  return {
    name: 'request',
    async collect(ctx: CollectorContext): Promise<CollectOutcome> {
      const url = setting(ctx.options, 'request', 'metadata_url');
      // The original reports this as "Unavailable" (a warning on every poll with the default collectors).
      if (url === undefined) return notConfigured('No metadata_url configured.');
      const timeoutMs = seconds(ctx.options, 'request', 'timeout', 10) * 1000;
      try {
        const head = await ctx.http({ method: 'HEAD', url, timeoutMs, signal: ctx.signal });
        const header = headerText(head.headers['last-modified']);
        if (header !== undefined && header !== '') {
          const seen = parseHttpDate(header);
          if (seen === undefined) ctx.log.warn(`ignoring an unparsable Last-Modified: ${header}`);
          else if (lastModified !== undefined && seen <= lastModified) return { kind: 'unchanged', reason: 'Last-Modified is not newer' };
        }
        const response = await ctx.http({ method: 'GET', url, timeoutMs, signal: ctx.signal });
        if (response.status < 200 || response.status > 299) return unavailable(`GET answered ${response.status}`);
        const body = jsonObject(responseText(response.headers, response.body));
        if (!body.ok) return unavailable(body.reason);
        // The GET's own headers describe the document we now hold (it may have changed since the HEAD).
        lastModified = comparableLastModified(response.headers);
        return { kind: 'data', outputs: explodeDeployments(body.value, ctx.options.deploymentKeys, 'request', ctx.log) };
      } catch (error) {
        return unavailable((error as Error).message);
      }
    },
  };
}

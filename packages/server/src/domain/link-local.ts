// Where hearth-server never sends a request it was given a URL for (alarm actions, actuator webhooks):
// cloud metadata services and the link-local ranges they live in. One rule set for every such URL,
// checked when the URL is stored (a coded 400) and again when it is called, on the addresses its
// name resolves to then (a name that was harmless when stored may point at the metadata service later).
import { lookup as systemLookup, type LookupAddress, type LookupAllOptions, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { redactUrl } from '../log-redaction.ts';

/**
 * 169.254.0.0/16 and fe80::/10, plus the metadata services outside them: AWS's IPv6 endpoint
 * (fd00:ec2::254), Alibaba Cloud's (100.100.100.200) and Oracle Cloud's older one (192.0.0.192).
 * BlockList also matches IPv4-mapped IPv6 (`::ffff:169.254.169.254`) against the IPv4 entries.
 */
const FORBIDDEN_ADDRESSES = new BlockList();
FORBIDDEN_ADDRESSES.addSubnet('169.254.0.0', 16, 'ipv4');
FORBIDDEN_ADDRESSES.addSubnet('fe80::', 10, 'ipv6');
FORBIDDEN_ADDRESSES.addAddress('fd00:ec2::254', 'ipv6');
FORBIDDEN_ADDRESSES.addAddress('100.100.100.200', 'ipv4');
FORBIDDEN_ADDRESSES.addAddress('192.0.0.192', 'ipv4');

/** Metadata services reached by name (they resolve to a metadata address inside their cloud only). */
const FORBIDDEN_NAMES = new Set(['metadata.google.internal', 'metadata.goog', 'metadata.tencentyun.com']);

/** Why a refused host is refused, for error messages. */
const REFUSED = 'is link-local or a cloud metadata service, which hearth-server never calls';

/** A host as compared: no brackets, lower case, no trailing dots (`metadata.google.internal.` is the same name). */
function normalHost(hostname: string): string {
  return hostname
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.+$/, '');
}

/** True when an IP address (any spelling `isIP` takes) is one hearth-server never connects to. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  return family !== 0 && FORBIDDEN_ADDRESSES.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * True when a URL's hostname (brackets allowed) is a forbidden address in any spelling the URL
 * parser leaves (dotted IPv4, IPv6, IPv4-mapped `[::ffff:a9fe:a9fe]`), or a metadata service's name.
 */
export function isForbiddenHost(hostname: string): boolean {
  const host = normalHost(hostname);
  return FORBIDDEN_NAMES.has(host) || isForbiddenAddress(host);
}

/**
 * A URL as hearth-server shows it (API replies, delivery errors, 400 messages, which are logged): a
 * user and password in it as `***`, the values of secret query parameters as `***` (redactUrl). It
 * is still sent with them: a basic-auth webhook works as it does with Aodh.
 */
export function shownUrl(url: string): string {
  return redactUrl(hideUserinfo(url));
}

/** A URL with its user and password, if any, as `***` (what an alarm's action list shows). */
export function hideUserinfo(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/*)[^/?#]*@/i, (_match, scheme: string) => `${scheme}***@`);
}

/** True when decodeURIComponent takes the text (what got does to a URL's user and password). */
function decodable(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Why hearth-server will not call a URL, or null if it will: http(s) only, and never a forbidden
 * host. `what` names the field in the message (`alarm_actions`, `actuator.url`); the URL is shown
 * without its credentials.
 */
export function outboundUrlProblem(what: string, url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `${what} ${JSON.stringify(shownUrl(url))} is not a URL`;
  }
  const shown = shownUrl(url);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `${what} ${shown} must be http or https, not ${parsed.protocol}`;
  if (isForbiddenHost(parsed.hostname)) return `${what} ${shown}: its host ${normalHost(parsed.hostname)} ${REFUSED}`;
  // The sender decodes user and password for basic auth: a bad %-escape there (`p%zz`) fails every
  // delivery with "URI malformed", so such a URL could never be sent.
  if (!decodable(parsed.username) || !decodable(parsed.password))
    return `${what} ${shown}: its user or password has a % that is not followed by two hex digits of UTF-8 (write % as %25)`;
  return null;
}

/** A resolver as `dns.lookup` is called with `all: true` (inject a stub in tests). */
export type AllAddressesLookup = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** The lookup a socket calls (`net.LookupFunction`, got's `dnsLookup`). */
export type SocketLookup = (
  hostname: string,
  options: LookupOptions,
  callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
) => void;

/** The error a refused resolution fails the request with (got reports its message). */
function refusal(hostname: string, address: string): NodeJS.ErrnoException {
  const shown = address === hostname ? hostname : `${hostname} (resolves to ${address})`;
  return Object.assign(new Error(`not sent: ${shown} ${REFUSED}`), { code: 'ERR_OUTBOUND_ADDRESS_REFUSED' });
}

/**
 * A socket lookup that resolves through `base` (default `dns.lookup`) and fails, before any
 * connection, when the name or any address it resolves to is forbidden. Checked at connect time
 * because a DNS answer can change after the URL was stored. IP literals never reach a lookup: the
 * URL check covers them.
 */
export function guardedLookup(base: AllAddressesLookup = systemLookup): SocketLookup {
  return (hostname, options, callback) => {
    if (isForbiddenHost(hostname)) return callback(refusal(hostname, hostname), '');
    base(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const forbidden = addresses.find((entry) => isForbiddenAddress(entry.address));
      if (forbidden) return callback(refusal(hostname, forbidden.address), '');
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} resolves to no address`), { code: 'ENOTFOUND' }), '');
      if (options.all) return callback(null, addresses);
      callback(null, first.address, first.family);
    });
  };
}

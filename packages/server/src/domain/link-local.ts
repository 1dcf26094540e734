// Where hearth never sends a request it was given a URL for (alarm actions, actuator webhooks):
// link-local addresses, where cloud metadata services live.
import { BlockList, isIP } from 'node:net';

/** 169.254.0.0/16 and fe80::/10; BlockList also matches IPv4-mapped IPv6 (`::ffff:169.254.169.254`) against the IPv4 range. */
const LINK_LOCAL = new BlockList();
LINK_LOCAL.addSubnet('169.254.0.0', 16, 'ipv4');
LINK_LOCAL.addSubnet('fe80::', 10, 'ipv6');

/**
 * True when a URL's hostname (brackets allowed) is a link-local address, in any spelling the URL
 * parser leaves: dotted IPv4, IPv6, or IPv4-mapped IPv6 (`[::ffff:a9fe:a9fe]` reaches 169.254.169.254).
 */
export function isLinkLocalHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const family = isIP(host);
  return family !== 0 && LINK_LOCAL.check(host, family === 4 ? 'ipv4' : 'ipv6');
}

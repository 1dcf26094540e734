// What an EC2-signed request may have been signed for when a reverse proxy stands in front: clients sign
// the host and path of the URL they were given, hearth's public URL, and a proxy may rewrite the Host to
// the backend's address or strip the public URL's path prefix before hearth sees them.
import type { Ec2Request } from '@hearth/protocol/signing';

/** The host and path prefix of hearth's public URL as a client signs them. */
export interface PublicSigningName {
  /** host[:port] as a client writes it from the URL: lower-cased, the scheme's default port left out. */
  host: string;
  /** The URL's path, decoded and without a trailing `/`; '' when hearth is served at the root. */
  pathPrefix: string;
}

/** The signing name of `publicUrl`, or null when it is not a URL (then only what is received counts). */
export function publicSigningName(publicUrl: string): PublicSigningName | null {
  let url: URL;
  try {
    url = new URL(publicUrl);
  } catch {
    return null;
  }
  const path = url.pathname.replace(/\/+$/, '');
  let pathPrefix = path;
  try {
    pathPrefix = decodeURIComponent(path);
  } catch {
    // Malformed percent-encoding: clients sign it as written.
  }
  return { host: url.host, pathPrefix };
}

/**
 * The request as the client may have signed it for the public URL, besides as received: with the public
 * host (a proxy that rewrote Host) and with the path prefix put back (a proxy that stripped it), and both.
 * Only the server's own public name is tried, never a host or path the request itself names.
 */
export function publicUrlVariants(received: Ec2Request, name: PublicSigningName): Ec2Request[] {
  const hosts = name.host === received.host ? [received.host] : [received.host, name.host];
  const paths = name.pathPrefix === '' ? [received.path] : [received.path, `${name.pathPrefix}${received.path}`];
  const variants: Ec2Request[] = [];
  for (const path of paths) {
    for (const host of hosts) {
      if (host !== received.host || path !== received.path) variants.push({ ...received, host, path });
    }
  }
  return variants;
}

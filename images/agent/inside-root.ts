// A path under a root directory as the guest (a chroot) sees it: symlinks followed inside the root, so a rootfs's
// absolute links (Debian's /var/run -> /run, a merged /bin -> /usr/bin) never lead to the host's files.
import { dirname, join, relative } from 'node:path';
import { readlinkSync } from 'node:fs';

/** Symlinks followed in one path before giving up on it (the kernel's limit). */
const MAX_SYMLINKS = 40;

/** `path` (under `root`) with every symlink on the way followed inside `root`; undefined after too many links (a loop). */
export function insideRoot(root: string, path: string): string | undefined {
  let resolved = root;
  const pending = relative(root, path).split('/');
  for (let links = 0; pending.length > 0;) {
    const name = pending.shift()!;
    if (name === '' || name === '.') continue;
    if (name === '..') {
      if (resolved !== root) resolved = dirname(resolved);
      continue;
    }
    const next = join(resolved, name);
    let target: string;
    try {
      target = readlinkSync(next);
    } catch {
      resolved = next; // not a link (or not there): taken as it is
      continue;
    }
    if ((links += 1) > MAX_SYMLINKS) return undefined;
    pending.unshift(...target.split('/'));
    if (target.startsWith('/')) resolved = root;
  }
  return resolved;
}

// The EC2 metadata from an OpenStack config drive (label `config-2`, vfat or iso9660):
// `ec2/latest/meta-data.json`. Any failure yields undefined, as the original yields `{}`.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseJsonObject } from './types.ts';

/** `blkid -o export` blocks -> the first config drive device, or undefined. */
export function findConfigDrive(blkidExport: string): string | undefined {
  for (const block of blkidExport.split(/\n\s*\n/)) {
    const fields = new Map(
      block
        .split('\n')
        .map((line) => line.split('='))
        .filter((pair): pair is [string, string] => pair.length >= 2)
        .map(([key, ...rest]) => [key.trim(), rest.join('=').trim()]),
    );
    if (fields.get('LABEL') === 'config-2' && ['vfat', 'iso9660'].includes(fields.get('TYPE') ?? '')) return fields.get('DEVNAME');
  }
  return undefined;
}

/** Where `/proc/mounts` says a device is mounted, or undefined. */
export function mountPointOf(procMounts: string, device: string): string | undefined {
  for (const line of procMounts.split('\n')) {
    const [source, target] = line.split(' ');
    if (source === device && target) return target.replace(/\\040/g, ' ');
  }
  return undefined;
}

/** Reads the config drive's EC2 metadata, mounting it read-only if needed; undefined when there is none. */
export function readConfigDrive(): Record<string, unknown> | undefined {
  const blkid = spawnSync('blkid', ['-o', 'export'], { encoding: 'utf8', timeout: 10_000 });
  if (blkid.status !== 0 || !blkid.stdout) return undefined;
  const device = findConfigDrive(blkid.stdout);
  if (device === undefined) return undefined;
  let mounted = false;
  let mountPoint: string | undefined;
  try {
    mountPoint = mountPointOf(readFileSync('/proc/mounts', 'utf8'), device);
    if (mountPoint === undefined) {
      mountPoint = mkdtempSync(join(tmpdir(), 'config-2-'));
      if (spawnSync('mount', [device, mountPoint, '-o', 'ro'], { timeout: 30_000 }).status !== 0) return undefined;
      mounted = true;
    }
    return parseJsonObject(readFileSync(join(mountPoint, 'ec2', 'latest', 'meta-data.json'), 'utf8'));
  } catch {
    return undefined;
  } finally {
    if (mountPoint !== undefined && mounted) {
      spawnSync('umount', ['-l', mountPoint], { timeout: 30_000 });
      try {
        rmdirSync(mountPoint);
      } catch {
        // left behind: harmless and visible
      }
    }
  }
}

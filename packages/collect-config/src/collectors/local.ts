// `local`: every JSON file in the configured directories, one output per file named by its
// basename, sorted in C byte order. A directory or file others could write makes the whole
// collector unavailable, as in the original.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Output } from '../explode.ts';
import { parseJson, settings, unavailable, type Collector } from './types.ts';

const WORLD_WRITABLE = 0o002;

/** Bytes that are not UTF-8 make the file invalid, as in the original, instead of turning into U+FFFD. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The `local` collector. */
export const localCollector: Collector = {
  name: 'local',
  async collect({ options, log }) {
    const dirs = settings(options, 'local', 'path') ?? [];
    if (dirs.length === 0) return unavailable('no [local] path configured');
    const outputs: Output[] = [];
    for (const dir of dirs) {
      let stat;
      try {
        stat = statSync(dir);
      } catch {
        log.warn(`${dir} not found. Skipping`);
        continue;
      }
      if (process.getuid !== undefined && stat.uid !== process.getuid())
        return unavailable(`${dir} is owned by another user. This is a security risk.`);
      if ((stat.mode & WORLD_WRITABLE) !== 0) return unavailable(`${dir} is world writable. This is a security risk.`);
      for (const name of readdirSync(dir)) {
        if (name.startsWith('.')) continue;
        const file = join(dir, name);
        const fileStat = statSync(file);
        if (fileStat.isDirectory()) continue;
        if ((fileStat.mode & WORLD_WRITABLE) !== 0) return unavailable(`${file} is world writable. This is a security risk.`);
        const bytes = readFileSync(file);
        try {
          outputs.push([name, parseJson(utf8.decode(bytes))]);
        } catch (error) {
          return unavailable(`${file} is not valid JSON (${(error as Error).message})`);
        }
      }
    }
    if (outputs.length === 0) log.info(`No local metadata found (${JSON.stringify(dirs)})`);
    outputs.sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    return { kind: 'data', outputs };
  },
};

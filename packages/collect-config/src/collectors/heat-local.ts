// `heat_local`: the boot-time metadata files (cfn-init-data) shallow-merged; missing or invalid
// files are skipped; nothing at all is "not available". Not exploded.
import { existsSync, readFileSync } from 'node:fs';
import { parseJsonObject, settings, unavailable, type Collector } from './types.ts';

/** Bytes that are not UTF-8 make the file invalid (skipped, as in the original), instead of turning into U+FFFD. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The `heat_local` collector. */
export const heatLocalCollector: Collector = {
  name: 'heat_local',
  async collect({ options, log }) {
    const paths = settings(options, 'heat_local', 'path') ?? [];
    let merged: Record<string, unknown> | undefined;
    for (const path of paths) {
      if (!existsSync(path)) continue;
      let value: Record<string, unknown> | undefined;
      try {
        value = parseJsonObject(utf8.decode(readFileSync(path)));
      } catch (error) {
        log.info(`${path} is not valid JSON (${(error as Error).message})`);
        continue;
      }
      if (value === undefined) {
        log.info(`${path} does not hold a JSON object; skipped`);
        continue;
      }
      merged = { ...merged, ...value };
    }
    if (merged === undefined || Object.keys(merged).length === 0) return unavailable(`Local metadata not found (${JSON.stringify(paths)})`);
    return { kind: 'data', outputs: [['heat_local', merged]] };
  },
};

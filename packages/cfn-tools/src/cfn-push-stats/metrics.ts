// Collects the metrics asked for, with the original's names and units; systeminformation is loaded only
// when a system metric is asked for.
import { setTimeout as sleep } from 'node:timers/promises';
import { SIZE_UNITS, type CfnPushStatsOptions } from './options.ts';

/** One datum to send. */
export interface MetricDatum {
  name: string;
  unit: string;
  value: number;
}

/** The figures the system metrics are computed from; systeminformation by default, injected in tests. */
export interface SystemSource {
  /** Bytes: total, used without buffers and cache, available (with them), swap total and used. */
  memory(): Promise<{ total: number; used: number; available: number; swapTotal: number; swapUsed: number }>;
  /** Bytes of the filesystem holding `path`. */
  disk(path: string): Promise<{ size: number; used: number; available: number }>;
  /** CPU utilisation in percent over about one second. */
  cpuPercent(): Promise<number>;
}

/** systeminformation behind SystemSource, imported on first use. */
export function systemInformationSource(): SystemSource {
  const load = async () => (await import('systeminformation')).default;
  return {
    async memory() {
      const mem = await (await load()).mem();
      return { total: mem.total, used: mem.active, available: mem.available, swapTotal: mem.swaptotal, swapUsed: mem.swapused };
    },
    async disk(path) {
      const filesystems = await (await load()).fsSize();
      const holding = filesystems
        .filter((fs) => path === fs.mount || path.startsWith(fs.mount.endsWith('/') ? fs.mount : `${fs.mount}/`))
        .sort((a, b) => b.mount.length - a.mount.length)[0];
      if (!holding) throw new Error(`no mounted filesystem holds --disk-path ${path}`);
      return { size: holding.size, used: holding.used, available: holding.available };
    },
    async cpuPercent() {
      const si = await load();
      await si.currentLoad();
      await sleep(1000);
      return (await si.currentLoad()).currentLoad;
    },
  };
}

function percent(part: number, whole: number): number {
  return whole > 0 ? (100 * part) / whole : 0;
}

/**
 * The data for the options, in the original's order: the custom metric, ServiceFailure, Heartbeat, memory, swap, disk,
 * CPU. A size's unit is the original's too: the `--memory-units`/`--disk-units` word itself (`megabytes`).
 */
export async function collectMetrics(options: CfnPushStatsOptions, source: SystemSource): Promise<MetricDatum[]> {
  const data: MetricDatum[] = [];
  const asked = new Set(options.systemMetrics);
  if (options.custom) data.push({ name: options.custom.name, unit: options.custom.units, value: options.custom.value });
  if (options.serviceFailure) data.push({ name: 'ServiceFailure', unit: 'Counter', value: 1 });
  if (options.heartbeat) data.push({ name: 'Heartbeat', unit: 'Counter', value: 1 });
  const memUnits = { unit: options.memoryUnits, divisor: SIZE_UNITS[options.memoryUnits] };
  if (['mem-util', 'mem-used', 'mem-avail', 'swap-util', 'swap-used'].some((name) => asked.has(name as never))) {
    const mem = await source.memory();
    if (asked.has('mem-util')) data.push({ name: 'MemoryUtilization', unit: 'Percent', value: percent(mem.used, mem.total) });
    if (asked.has('mem-used')) data.push({ name: 'MemoryUsed', unit: memUnits.unit, value: mem.used / memUnits.divisor });
    if (asked.has('mem-avail')) data.push({ name: 'MemoryAvailable', unit: memUnits.unit, value: mem.available / memUnits.divisor });
    if (asked.has('swap-util')) data.push({ name: 'SwapUtilization', unit: 'Percent', value: percent(mem.swapUsed, mem.swapTotal) });
    if (asked.has('swap-used')) data.push({ name: 'SwapUsed', unit: memUnits.unit, value: mem.swapUsed / memUnits.divisor });
  }
  if (['disk-space-util', 'disk-space-used', 'disk-space-avail'].some((name) => asked.has(name as never))) {
    const disk = await source.disk(options.diskPath);
    const diskUnits = { unit: options.diskUnits, divisor: SIZE_UNITS[options.diskUnits] };
    // Of the space users can have (used + available), as psutil.disk_usage and df's Use% count it: blocks
    // reserved for root are neither, so used / size reads low (on ext4's default 5% reserve, 95 for a full disk).
    if (asked.has('disk-space-util'))
      data.push({ name: 'DiskSpaceUtilization', unit: 'Percent', value: percent(disk.used, disk.used + disk.available) });
    if (asked.has('disk-space-used')) data.push({ name: 'DiskSpaceUsed', unit: diskUnits.unit, value: disk.used / diskUnits.divisor });
    if (asked.has('disk-space-avail'))
      data.push({ name: 'DiskSpaceAvailable', unit: diskUnits.unit, value: disk.available / diskUnits.divisor });
  }
  if (asked.has('cpu-util')) data.push({ name: 'CPUUtilization', unit: 'Percent', value: await source.cpuPercent() });
  return data;
}

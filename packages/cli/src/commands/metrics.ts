import type { MetricListQuery, MetricSample, MetricSampleInput } from '@hearth/protocol';
import type { Command } from 'commander';
import { usageError } from '../errors.ts';
import { collect, parseLimit } from '../flag-values.ts';
import { addExamples, METRICS_EXAMPLES } from '../help-examples.ts';
import { openSession, type CliDeps } from '../session.ts';
import { parseDimensions } from './alarm.ts';

/** Flags of `hearth metrics put`. */
export interface MetricsPutFlags {
  namespace?: string;
  unit?: string;
  dimension?: string[];
}

/** Builds one sample from `hearth metrics put NAME VALUE` and its flags; throws a usage error on a bad value. */
export function buildSample(name: string, valueText: string, flags: MetricsPutFlags): MetricSampleInput {
  const value = Number(valueText);
  if (valueText.trim() === '' || !Number.isFinite(value)) throw usageError(`value ${JSON.stringify(valueText)} is not a number`);
  const sample: MetricSampleInput = { metric_name: name, value };
  if (flags.namespace !== undefined) sample.namespace = flags.namespace;
  if (flags.unit !== undefined) sample.unit = flags.unit;
  const dimensions = parseDimensions(flags.dimension);
  if (dimensions) sample.dimensions = dimensions;
  return sample;
}

/** Registers `hearth metrics put|list`. */
export function registerMetricsCommands(program: Command, deps: CliDeps): void {
  const metrics = program.command('metrics').description('metric samples: send one as a server, list what was stored');
  addExamples(metrics, METRICS_EXAMPLES);

  metrics
    .command('put')
    .description("send one sample as a server: --token (HEARTH_TOKEN) must be that server's credential token (access_key:secret)")
    .argument('<metric>', 'metric name, e.g. QueueDepth')
    .argument('<value>', 'the value (a number)')
    .option('--namespace <ns>', 'namespace (default system/linux)')
    .option('--unit <unit>', 'CloudWatch unit, e.g. Percent, Count, Bytes')
    .option('--dimension <name=value>', 'a dimension (repeatable)', collect)
    .action(async (metric: string, value: string, flags: MetricsPutFlags, cmd: Command) => {
      const session = openSession(cmd, deps);
      const result = await session.client().putMetrics({ samples: [buildSample(metric, value, flags)] });
      session.out.result(result, () => `stored ${result.stored} sample(s)\n`);
    });

  metrics
    .command('list')
    .description('list stored samples, newest first')
    .option('--namespace <ns>', 'only this namespace')
    .option('--metric <name>', 'only this metric')
    .option('--server <id>', 'only samples sent by this server')
    .option('--since <time>', 'only samples at or after this time (YYYY-MM-DDTHH:MM:SSZ)')
    .option('--limit <n>', 'at most this many (default 100)')
    .action(async (flags: { namespace?: string; metric?: string; server?: string; since?: string; limit?: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const query: MetricListQuery = {};
      if (flags.namespace !== undefined) query.namespace = flags.namespace;
      if (flags.metric !== undefined) query.metric_name = flags.metric;
      if (flags.server !== undefined) query.server_id = flags.server;
      if (flags.since !== undefined) {
        if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(flags.since))
          throw usageError(`--since ${JSON.stringify(flags.since)} is not a UTC time`, 'write e.g. --since 2026-01-01T00:00:00Z');
        query.since = flags.since;
      }
      if (flags.limit !== undefined) query.limit = parseLimit(flags.limit, '--limit');
      const samples = await session.client().listMetrics(query);
      const filtered = Object.keys(query).some((key) => key !== 'limit') ? ' matching the filters' : '';
      session.out.list<MetricSample>(
        { samples },
        [
          { header: 'time', value: (s) => s.time },
          { header: 'namespace', value: (s) => s.namespace },
          { header: 'metric', value: (s) => s.metric_name },
          { header: 'value', value: (s) => s.value },
          { header: 'unit', value: (s) => s.unit },
          { header: 'server', value: (s) => s.server_id },
          {
            header: 'dimensions',
            value: (s) =>
              Object.entries(s.dimensions)
                .map(([k, v]) => `${k}=${v}`)
                .join(',') || '-',
          },
        ],
        samples,
        `no metric samples${filtered} in project ${session.options.project}`,
      );
    });
}

import {
  DEFAULT_METRIC_NAMESPACE,
  MAX_METRIC_DIMENSIONS,
  MAX_METRIC_NAME_LENGTH,
  MAX_METRIC_UNIT_LENGTH,
  MAX_SAMPLES_PER_PUT,
  type MetricSampleInput,
} from '@hearth/protocol';
import { HearthError } from './errors.ts';

/** A PutMetricData request read from its AWS query form: the namespace and one sample per member. */
export interface PutMetricDataRequest {
  namespace: string;
  samples: MetricSampleInput[];
}

const MEMBER = /^MetricData\.member\.(\d{1,4})\.(MetricName|Unit|Value|Timestamp|Dimensions\.member\.(\d{1,3})\.(Name|Value))$/;

function invalid(reason: string): never {
  throw new HearthError('ERR_METRIC_INVALID', { reason });
}

/** Refuses a parameter longer than the JSON routes take (counted in characters, as the database counts them). */
function assertLength(parameter: string, value: string, max: number): void {
  const length = [...value].length;
  if (length > max) invalid(`${parameter} is ${length} characters long; at most ${max} are stored`);
}

/**
 * Reads `Action=PutMetricData` parameters as boto (cfn-push-stats) sends them:
 * `Namespace`, `MetricData.member.N.{MetricName,Unit,Value,Timestamp}` and
 * `MetricData.member.N.Dimensions.member.M.{Name,Value}`. Every member is taken (Heat used only the
 * first); members are numbered from 1 and need not be contiguous. StatisticValues sets are refused
 * (one raw value per member). Names, units and dimensions are held to the JSON routes' lengths.
 * Throws ERR_METRIC_INVALID with the offending parameter.
 */
export function parsePutMetricData(params: Record<string, string>): PutMetricDataRequest {
  const namespace = params.Namespace ?? DEFAULT_METRIC_NAMESPACE;
  assertLength('Namespace', namespace, MAX_METRIC_NAME_LENGTH);
  type Dimension = { Name?: string; Value?: string };
  type Member = { fields: Record<string, string>; dims: Map<number, Dimension> };
  const members = new Map<number, Member>();
  for (const [key, value] of Object.entries(params)) {
    if (!key.startsWith('MetricData.')) continue;
    const match = MEMBER.exec(key);
    if (!match) invalid(`parameter ${key} is not supported (send MetricName, Unit, Value, Timestamp and Dimensions per member)`);
    const index = Number(match[1]);
    const member: Member = members.get(index) ?? { fields: {}, dims: new Map() };
    members.set(index, member);
    if (match[3] !== undefined) {
      const dim: Dimension = member.dims.get(Number(match[3])) ?? {};
      dim[match[4] as 'Name' | 'Value'] = value;
      member.dims.set(Number(match[3]), dim);
    } else {
      member.fields[match[2]!] = value;
    }
  }
  if (members.size === 0) invalid('no MetricData.member.N.MetricName was given');
  if (members.size > MAX_SAMPLES_PER_PUT) invalid(`${members.size} members is more than the ${MAX_SAMPLES_PER_PUT} one request may carry`);
  const samples = [...members.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, { fields, dims }]) => {
      const prefix = `MetricData.member.${index}`;
      if (!fields.MetricName) invalid(`${prefix}.MetricName is missing`);
      assertLength(`${prefix}.MetricName`, fields.MetricName, MAX_METRIC_NAME_LENGTH);
      const rawValue = fields.Value;
      const value = rawValue === undefined || rawValue.trim() === '' ? NaN : Number(rawValue);
      if (!Number.isFinite(value)) invalid(`${prefix}.Value ${JSON.stringify(rawValue ?? null)} is not a number`);
      if (dims.size > MAX_METRIC_DIMENSIONS) invalid(`${prefix} has ${dims.size} dimensions, more than ${MAX_METRIC_DIMENSIONS}`);
      const dimensions: Record<string, string> = {};
      for (const [m, dim] of dims) {
        if (!dim.Name || dim.Value === undefined) invalid(`${prefix}.Dimensions.member.${m} needs both Name and Value`);
        assertLength(`${prefix}.Dimensions.member.${m}.Name`, dim.Name, MAX_METRIC_NAME_LENGTH);
        assertLength(`${prefix}.Dimensions.member.${m}.Value`, dim.Value, MAX_METRIC_NAME_LENGTH);
        dimensions[dim.Name] = dim.Value;
      }
      const sample: MetricSampleInput = { metric_name: fields.MetricName, value, namespace, dimensions };
      if (fields.Unit) {
        assertLength(`${prefix}.Unit`, fields.Unit, MAX_METRIC_UNIT_LENGTH);
        sample.unit = fields.Unit;
      }
      if (fields.Timestamp) {
        const time = Date.parse(fields.Timestamp);
        if (Number.isNaN(time)) invalid(`${prefix}.Timestamp ${fields.Timestamp} is not an ISO 8601 time`);
        sample.timestamp = new Date(time).toISOString();
      }
      return sample;
    });
  return { namespace, samples };
}

/** The PutMetricData reply (CloudWatch's XML, with the empty ResponseMetadata Heat sent). */
export function putMetricDataXml(requestId: string): string {
  return (
    '<PutMetricDataResponse xmlns="http://monitoring.amazonaws.com/doc/2010-08-01/">' +
    `<ResponseMetadata><RequestId>${requestId.replace(/[^A-Za-z0-9-]/g, '')}</RequestId></ResponseMetadata>` +
    '</PutMetricDataResponse>'
  );
}

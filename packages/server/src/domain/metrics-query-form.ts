import {
  DEFAULT_METRIC_NAMESPACE,
  MAX_METRIC_DIMENSIONS,
  MAX_METRIC_NAME_LENGTH,
  MAX_METRIC_UNIT_LENGTH,
  MAX_SAMPLES_PER_PUT,
  type MetricSampleInput,
} from '@hearth/protocol';
import { HearthError } from './errors.ts';
import { metricTextProblem, metricValueProblem, parseSampleTime } from './metrics.ts';

/** A PutMetricData request read from its AWS query form: the namespace and one sample per member. */
export interface PutMetricDataRequest {
  namespace: string;
  samples: MetricSampleInput[];
}

const MEMBER = /^MetricData\.member\.(\d{1,4})\.(MetricName|Unit|Value|Timestamp|Dimensions\.member\.(\d{1,3})\.(Name|Value))$/;

function invalid(reason: string): never {
  throw new HearthError('ERR_METRIC_INVALID', { reason });
}

/**
 * Refuses a parameter the JSON routes would not take: empty, longer than stored (counted in
 * characters, as the database counts them), or holding a control character.
 */
function assertText(parameter: string, value: string, max: number): void {
  const length = [...value].length;
  if (length === 0) invalid(`${parameter} is empty`);
  if (length > max) invalid(`${parameter} is ${length} characters long; at most ${max} are stored`);
  const problem = metricTextProblem(parameter, value);
  if (problem) invalid(problem);
}

/** A number as CloudWatch takes it: decimal, optionally signed, with an exponent (boto sends `str(float)`); no hex, no padding. */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

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
  assertText('Namespace', namespace, MAX_METRIC_NAME_LENGTH);
  type Dimension = { Name?: string; Value?: string };
  type Member = { fields: Record<string, string>; dims: Map<number, Dimension> };
  const members = new Map<number, Member>();
  for (const [key, value] of Object.entries(params)) {
    if (!key.startsWith('MetricData.')) continue;
    const match = MEMBER.exec(key);
    if (!match) invalid(`parameter ${key} is not supported (send MetricName, Unit, Value, Timestamp and Dimensions per member)`);
    const index = Number(match[1]);
    // AWS query lists count from 1; a 0 is a client's off-by-one, not a member to guess at.
    if (index === 0 || (match[3] !== undefined && Number(match[3]) === 0))
      invalid(`parameter ${key} counts from 0; members are numbered from 1`);
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
      if (fields.MetricName === undefined) invalid(`${prefix}.MetricName is missing`);
      assertText(`${prefix}.MetricName`, fields.MetricName, MAX_METRIC_NAME_LENGTH);
      const rawValue = fields.Value;
      const value = rawValue === undefined || !DECIMAL.test(rawValue) ? NaN : Number(rawValue);
      if (Number.isNaN(value)) invalid(`${prefix}.Value ${JSON.stringify(rawValue ?? null)} is not a number`);
      const valueProblem = metricValueProblem(`${prefix}.Value`, value, rawValue);
      if (valueProblem) invalid(valueProblem);
      if (dims.size > MAX_METRIC_DIMENSIONS) invalid(`${prefix} has ${dims.size} dimensions, more than ${MAX_METRIC_DIMENSIONS}`);
      const dimensions: Record<string, string> = {};
      const memberOf = new Map<string, number>();
      for (const [m, dim] of [...dims.entries()].sort(([a], [b]) => a - b)) {
        const at = `${prefix}.Dimensions.member.${m}`;
        if (dim.Name === undefined || dim.Value === undefined) invalid(`${at} needs both Name and Value`);
        assertText(`${at}.Name`, dim.Name, MAX_METRIC_NAME_LENGTH);
        // An empty value is kept: cfn-push-stats sends every Nova meta tag as a dimension, and a tag may be empty.
        if (dim.Value !== '') assertText(`${at}.Value`, dim.Value, MAX_METRIC_NAME_LENGTH);
        // As the JSON routes refuse it: a plain object would drop it silently.
        if (dim.Name === '__proto__') invalid(`${at}.Name is __proto__, which is not stored; rename the dimension`);
        const earlier = memberOf.get(dim.Name);
        if (earlier !== undefined) invalid(`${at}.Name ${dim.Name} repeats Dimensions.member.${earlier}; a dimension takes one value`);
        memberOf.set(dim.Name, m);
        dimensions[dim.Name] = dim.Value;
      }
      const sample: MetricSampleInput = { metric_name: fields.MetricName, value, namespace, dimensions };
      if (fields.Unit) {
        assertText(`${prefix}.Unit`, fields.Unit, MAX_METRIC_UNIT_LENGTH);
        sample.unit = fields.Unit;
      }
      if (fields.Timestamp) {
        // ISO 8601, UTC when it names no offset, whatever the server's time zone.
        const time = parseSampleTime(fields.Timestamp);
        if (time === null) invalid(`${prefix}.Timestamp ${fields.Timestamp} is not an ISO 8601 time`);
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

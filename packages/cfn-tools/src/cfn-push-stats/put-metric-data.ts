// PutMetricData as an AWS query form POST, EC2 signature v2 over every parameter (they all travel in the
// body), one request per datum as the original sent them.
import type { HttpRequestOptions, HttpResponse } from '@hearth/agent-kit/http';
import type { Credentials } from '../shared/credentials.ts';
import { signedQuery } from '../shared/ec2-query.ts';
import type { MetricDatum } from './metrics.ts';

/** The namespace of the original's system metrics. */
export const METRIC_NAMESPACE = 'system/linux';

/** The form parameters of one datum with its dimensions. */
export function putMetricDataParams(datum: MetricDatum, dimensions: ReadonlyArray<[string, string]>): Record<string, string> {
  const params: Record<string, string> = {
    Action: 'PutMetricData',
    Version: '2010-08-01',
    Namespace: METRIC_NAMESPACE,
    'MetricData.member.1.MetricName': datum.name,
    'MetricData.member.1.Unit': datum.unit,
    'MetricData.member.1.Value': String(datum.value),
  };
  dimensions.forEach(([name, value], index) => {
    params[`MetricData.member.1.Dimensions.member.${index + 1}.Name`] = name;
    params[`MetricData.member.1.Dimensions.member.${index + 1}.Value`] = value;
  });
  return params;
}

/** Options of putMetricData. */
export interface PutMetricDataOptions {
  endpointUrl: string;
  credentials: Credentials;
  datum: MetricDatum;
  dimensions: ReadonlyArray<[string, string]>;
  insecure: boolean;
  http: (options: HttpRequestOptions) => Promise<HttpResponse>;
  now?: Date;
}

/** Sends one datum; returns the response (any status) or throws HttpRequestError. */
export function putMetricData(options: PutMetricDataOptions): Promise<HttpResponse> {
  const params = putMetricDataParams(options.datum, options.dimensions);
  return options.http({
    method: 'POST',
    url: options.endpointUrl,
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    body: signedQuery('POST', options.endpointUrl, params, options.credentials, options.now),
    insecure: options.insecure,
    timeoutMs: 10_000,
  });
}

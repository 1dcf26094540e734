// The plumbing every cfn-tools command shares.
export * from './args.ts';
export * from './credentials.ts';
export * from './describe-stack-resource.ts';
export * from './ec2-query.ts';
export * from './endpoint.ts';
export * from './fetch-metadata.ts';
export * from './instance-id.ts';
export * from './metadata-cache.ts';
export * from './python-json.ts';

// Signing and verification shared by hearth-server and the agents, without TypeBox: EC2
// signatures (v2 and SigV4), Heat ARNs and Swift temp URLs. Import as `@hearth/protocol/signing`.
export * from './arn.ts';
export * from './constant-time.ts';
export * from './ec2-sign-v2.ts';
export * from './ec2-signature.ts';
export { parseIsoTimestamp } from './ec2-canonical.ts';
export * from './temp-url.ts';

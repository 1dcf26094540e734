import { Type, type Static } from 'typebox';
import { ConfigBody, StoredInput, StoredOutput } from './software-config.ts';
import { JsonObject, Timestamp, Uuid } from './common.ts';

/**
 * One entry of a server's `deployments` list: a derived config (reference/server.md §3.4). Its `id`
 * is fresh on every action, because agents de-duplicate by it.
 */
export const DerivedConfig = Type.Object({
  id: Uuid,
  name: Type.String(),
  group: Type.String(),
  creation_time: Timestamp,
  config: ConfigBody,
  options: JsonObject,
  inputs: Type.Array(StoredInput),
  outputs: Type.Array(StoredOutput),
});
export type DerivedConfig = Static<typeof DerivedConfig>;

/** What the agent reads from GET /v1/guest/metadata. */
export const MetadataDocument = Type.Object({
  deployments: Type.Array(DerivedConfig),
  'os-collect-config': JsonObject,
});
export type MetadataDocument = Static<typeof MetadataDocument>;

/** Query of GET /v1/guest/metadata: `wait` long-polls up to 60 s for a change. */
export const MetadataQuery = Type.Object(
  { wait: Type.Optional(Type.Integer({ minimum: 0, maximum: 60 })) },
  { additionalProperties: false },
);
export type MetadataQuery = Static<typeof MetadataQuery>;

/** GET /v1/{project}/software_deployments/metadata/{server_id} reply (Heat shape). */
export const DeploymentsMetadataReply = Type.Object({ metadata: Type.Array(DerivedConfig) });

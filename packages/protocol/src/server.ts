import { Type, type Static } from 'typebox';
import { Name, ServerId, Timestamp } from './common.ts';
import { ResourceName } from './stack.ts';

/**
 * How a server's agent fetches its metadata (Heat's `software_config_transport`, plus hearth's own).
 * HEARTH_LONG_POLL: `GET /v1/guest/metadata?wait=` with the agent credential (changes arrive at once).
 * POLL_SERVER_CFN: os-collect-config's `cfn` collector, DescribeStackResource signed with EC2 keys.
 * POLL_SERVER_HEAT: the `heat` collector, keystone v3 password auth then the resource metadata.
 * POLL_TEMP_URL: the `request` collector, a Swift-style temp URL (no other credential).
 */
export const CONFIG_TRANSPORTS = ['HEARTH_LONG_POLL', 'POLL_SERVER_CFN', 'POLL_SERVER_HEAT', 'POLL_TEMP_URL'] as const;
export const ConfigTransport = Type.Union([
  Type.Literal('HEARTH_LONG_POLL'),
  Type.Literal('POLL_SERVER_CFN'),
  Type.Literal('POLL_SERVER_HEAT'),
  Type.Literal('POLL_TEMP_URL'),
]);
export type ConfigTransport = (typeof CONFIG_TRANSPORTS)[number];

/**
 * POST /v1/{project}/servers body: `id` may be given (e.g. Nova's instance uuid), else one is made.
 * `stack` (name or id) puts the server in a stack as resource `resource_name` (default: its name);
 * otherwise its resource lives in the pseudo-stack `servers/{id}` as `server`.
 */
export const ServerCreate = Type.Object(
  {
    name: Name,
    id: Type.Optional(ServerId),
    software_config_transport: Type.Optional(ConfigTransport),
    stack: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    resource_name: Type.Optional(ResourceName),
  },
  { additionalProperties: false },
);
export type ServerCreate = Static<typeof ServerCreate>;

/** A registered server (VM). */
export const Server = Type.Object({
  id: Type.String(),
  name: Type.String(),
  project_id: Type.String(),
  access_key_id: Type.String(),
  software_config_transport: Type.String(),
  stack_id: Type.Union([Type.String(), Type.Null()]),
  stack_name: Type.String(),
  resource_name: Type.String(),
  creation_time: Timestamp,
  last_seen: Type.Union([Timestamp, Type.Null()]),
});
export type Server = Static<typeof Server>;

/**
 * The agent credential, shown once when the server is registered. `token` is
 * `<access_key_id>:<secret_access_key>`, sent as `Authorization: Bearer <token>`.
 * The same pair signs EC2 requests (CFN transport) and is the keystone user id and password
 * (heat transport).
 */
export const AgentCredential = Type.Object({
  access_key_id: Type.String(),
  secret_access_key: Type.String(),
  token: Type.String(),
  metadata_url: Type.String(),
});
export type AgentCredential = Static<typeof AgentCredential>;

/**
 * Reply to POST /servers. `os_collect_config` is the `os-collect-config` key Heat would write
 * into the server's metadata for its transport; `os_collect_config_conf` is the same as a ready
 * `/etc/os-collect-config.conf` (ini) for the image.
 */
export const ServerCreated = Type.Object({
  server: Server,
  credential: AgentCredential,
  os_collect_config: Type.Record(Type.String(), Type.Unknown()),
  os_collect_config_conf: Type.String(),
});
export type ServerCreated = Static<typeof ServerCreated>;

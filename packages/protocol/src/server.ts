import { Type, type Static } from 'typebox';
import { Name, ServerId, Timestamp } from './common.ts';

/** POST /v1/{project}/servers body: `id` may be given (e.g. Nova's instance uuid), else one is made. */
export const ServerCreate = Type.Object({ name: Name, id: Type.Optional(ServerId) }, { additionalProperties: false });
export type ServerCreate = Static<typeof ServerCreate>;

/** A registered server (VM). */
export const Server = Type.Object({
  id: Type.String(),
  name: Type.String(),
  project_id: Type.String(),
  access_key_id: Type.String(),
  creation_time: Timestamp,
  last_seen: Type.Union([Timestamp, Type.Null()]),
});
export type Server = Static<typeof Server>;

/**
 * The agent credential, shown once when the server is registered. `token` is
 * `<access_key_id>:<secret_access_key>`, sent as `Authorization: Bearer <token>`.
 */
export const AgentCredential = Type.Object({
  access_key_id: Type.String(),
  secret_access_key: Type.String(),
  token: Type.String(),
  metadata_url: Type.String(),
});
export type AgentCredential = Static<typeof AgentCredential>;

/** Reply to POST /servers. */
export const ServerCreated = Type.Object({ server: Server, credential: AgentCredential });
export type ServerCreated = Static<typeof ServerCreated>;

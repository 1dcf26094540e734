// What the software_configs and software_deployments routes take as Heat's API does: an item id of any text
// (one that is not a UUID is answered 404 as an unknown one, after auth, and never reaches the store), and
// list parameters Heat does not know, accepted and ignored.
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import { ProjectId, Uuid } from '@hearth/protocol';
import { HearthError } from '../../domain/errors.ts';

/** Any text: an id that is not a UUID is answered by knownUuid, after auth, as Heat does (404). */
export const HeatItemParams = Type.Object({ project_id: ProjectId, id: Type.String() });
/**
 * The parameters Heat's lists do not know, accepted and ignored as Heat's whitelists do
 * (`global_tenant` included: a hearth operator sees one project's configs at a time).
 */
export const IgnoredQueryValue = Type.Union([
  Type.String({ maxLength: 1024 }),
  Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 64 }),
]);

const SHOWN_ID_CHARS = 64;

/** An id from a URL as a message shows it: its first 64 characters, control and format characters as `\uXXXX`. */
export function shownId(id: string): string {
  const head = id.length > SHOWN_ID_CHARS ? `${id.slice(0, SHOWN_ID_CHARS)}…` : id;
  return head.replace(/[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu, (char) => {
    const code = char.codePointAt(0) ?? 0;
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/**
 * The id if it is a UUID; otherwise the not-found error of an unknown one, as Heat answers it (a 400
 * would be HTTPBadRequest where heatclient users catch HTTPNotFound). No such id reaches the store.
 */
export function knownUuid(id: string, notFound: 'ERR_CONFIG_NOT_FOUND' | 'ERR_DEPLOYMENT_NOT_FOUND'): string {
  if (!Value.Check(Uuid, id)) throw new HearthError(notFound, { id: shownId(id) });
  return id;
}

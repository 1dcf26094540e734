/**
 * Whether an `If-None-Match` header names the current entity tag (RFC 9110 §13.1.2): `*`, or a
 * list of tags compared weakly (`W/"x"` matches `"x"`). The exact header an agent echoes back is
 * checked first, so the common poll costs one string comparison.
 */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header === etag) return true;
  const wanted = etag.startsWith('W/') ? etag.slice(2) : etag;
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || (tag.startsWith('W/') ? tag.slice(2) : tag) === wanted;
  });
}

/**
 * Whether an `If-Match` header admits the current entity tag (RFC 9110 §13.1.1): `*`, or a list of
 * tags compared strongly (a weak `W/"x"` never matches).
 */
export function ifMatchHits(header: string, etag: string): boolean {
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag === etag;
  });
}

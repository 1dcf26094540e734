/** Joins URL path segments, percent-encoding each one. */
export function joinPath(...segments: string[]): string {
  return '/' + segments.map((segment) => encodeURIComponent(segment)).join('/');
}

/** Path of a native API resource: `/v1/{project}/...segments`. */
export function projectPath(project: string, ...segments: string[]): string {
  return joinPath('v1', project, ...segments);
}

/** Path of a guest (agent) API resource: `/v1/guest/...segments`. */
export function guestPath(...segments: string[]): string {
  return joinPath('v1', 'guest', ...segments);
}

import type { Store } from '../store/store.ts';
import { HearthError } from './errors.ts';

/** The project every fresh data dir has, so Heat-shaped calls to /v1/default/... work at once. */
export const DEFAULT_PROJECT = 'default';

/** Creates the default project if it is missing. */
export async function ensureDefaultProject(store: Store): Promise<void> {
  await store.write(async ({ trx, now }) => {
    await trx
      .insertInto('projects')
      .values({ id: DEFAULT_PROJECT, name: DEFAULT_PROJECT, created_at: now })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  });
}

/** Known project ids, cached (projects are never deleted). */
export class ProjectDirectory {
  private readonly known = new Set<string>();

  constructor(private readonly store: Store) {}

  /** Throws ERR_PROJECT_NOT_FOUND unless the project exists. */
  async assertExists(projectId: string): Promise<void> {
    if (this.known.has(projectId)) return;
    const row = await this.store.reader.selectFrom('projects').select('id').where('id', '=', projectId).executeTakeFirst();
    if (!row) throw new HearthError('ERR_PROJECT_NOT_FOUND', { project: projectId });
    this.known.add(projectId);
  }
}

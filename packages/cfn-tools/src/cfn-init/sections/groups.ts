// groups: {name: {gid?}}. A group that already exists (getent) is left alone, so a re-run (cfn-hup)
// succeeds; a new one is made with groupadd [--gid N].
import { commandFailed, isObject, outputTail, scalarText, StepError, type SectionContext } from '../context.ts';

/** groupadd's exit codes, as the original explains them. */
const GROUPADD_ERRORS: Record<number, string> = {
  2: 'invalid syntax',
  3: 'GID not valid',
  4: 'GID not unique',
  9: 'group name not unique',
};

/** Creates the groups `groups` lists that do not exist yet. */
export async function applyGroups(ctx: SectionContext, groups: unknown): Promise<void> {
  if (groups === undefined) return;
  if (!isObject(groups))
    throw new StepError('groups', '(section)', null, `must be an object of {group: {gid}}, not ${JSON.stringify(groups)}`);
  for (const [group, properties] of Object.entries(groups)) {
    const rawGid = isObject(properties) ? properties.gid : undefined;
    const gid = scalarText(rawGid);
    if (rawGid !== undefined && (gid === undefined || !/^\d+$/.test(gid)))
      throw new StepError('groups', group, null, `gid must be a number, not ${JSON.stringify(rawGid)}`);
    const existing = await ctx.runner.run(['getent', 'group', group]);
    if (existing.exitCode === 0) {
      ctx.log.info('group exists', { section: 'groups', group });
      continue;
    }
    const result = await ctx.runner.run(['groupadd', group, ...(gid === undefined ? [] : ['--gid', gid])]);
    if (result.exitCode !== 0) {
      const why = GROUPADD_ERRORS[result.exitCode ?? -1] ?? outputTail(result);
      throw new StepError('groups', group, result.exitCode, commandFailed(result, why));
    }
    ctx.log.info('group created', { section: 'groups', group, command: result.command });
  }
}

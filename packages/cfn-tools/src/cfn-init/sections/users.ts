// users: {name: {uid?, groups?: [..], homeDir?}}. As in AWS and the original, users are
// non-interactive (shell /sbin/nologin). A new user is made with useradd; an existing one
// (getent) gets usermod with the same settings, so a re-run converges instead of failing.
import { commandFailed, isObject, outputTail, scalarText, StepError, type SectionContext } from '../context.ts';

/** useradd/usermod exit codes, as the original explains them. */
const USERADD_ERRORS: Record<number, string> = {
  2: 'invalid syntax',
  3: 'invalid argument',
  4: 'UID not unique',
  6: 'group does not exist',
  9: 'user name not unique',
};

function userFlags(user: string, properties: Record<string, unknown>): string[] {
  const { uid, homeDir, groups } = properties;
  const flags: string[] = [];
  if (uid !== undefined) {
    const text = scalarText(uid);
    if (text === undefined || !/^\d+$/.test(text))
      throw new StepError('users', user, null, `uid must be a number, not ${JSON.stringify(uid)}`);
    flags.push('--uid', text);
  }
  if (homeDir !== undefined) {
    if (typeof homeDir !== 'string' || homeDir === '')
      throw new StepError('users', user, null, `homeDir must be a path, not ${JSON.stringify(homeDir)}`);
    flags.push('--home', homeDir);
  }
  if (groups !== undefined) {
    if (!Array.isArray(groups) || groups.some((group) => typeof group !== 'string')) {
      throw new StepError('users', user, null, `groups must be a list of group names, not ${JSON.stringify(groups)}`);
    }
    if (groups.length > 0) flags.push('--groups', groups.join(','));
  }
  return flags;
}

/** Creates (or updates) the users `users` lists. */
export async function applyUsers(ctx: SectionContext, users: unknown): Promise<void> {
  if (users === undefined) return;
  if (!isObject(users))
    throw new StepError('users', '(section)', null, `must be an object of {user: {uid, groups, homeDir}}, not ${JSON.stringify(users)}`);
  for (const [user, properties] of Object.entries(users)) {
    const flags = userFlags(user, isObject(properties) ? properties : {});
    const existing = await ctx.runner.run(['getent', 'passwd', user]);
    const command = existing.exitCode === 0 ? ['usermod', ...flags, user] : ['useradd', user, ...flags, '--shell', '/sbin/nologin'];
    if (existing.exitCode === 0 && flags.length === 0) {
      ctx.log.info('user exists', { section: 'users', user });
      continue;
    }
    const result = await ctx.runner.run(command);
    if (result.exitCode !== 0) {
      const why = USERADD_ERRORS[result.exitCode ?? -1] ?? outputTail(result);
      throw new StepError('users', user, result.exitCode, commandFailed(result, why));
    }
    ctx.log.info(existing.exitCode === 0 ? 'user updated' : 'user created', { section: 'users', user, command: result.command });
  }
}

// files: {path: {content | source, encoding, mode, owner, group, context}}. Content is a string
// (plain or base64) or any other JSON value, written as JSON (the original crashes on that on
// Python 3); `source` is downloaded without a shell; `context` renders the text as a mustache
// template (AWS cfn-init's pystache rules, see mustache.ts). A mode beginning 120 (e.g. "120644")
// makes a symlink to the content. The file is replaced atomically; parent directories are made.
// A path that is a symlink is written through (the link stays, its target gets the content, mode and
// owner), as the original's open(path, 'w') does.
// A file whose bytes, mode or ownership changed is recorded for services.
import { lstat, mkdir, readFile, readlink, rename, rm, symlink, writeFile, chmod, chown } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { redactUrl } from '@hearth/agent-kit/redact';
import { isObject, scalarText, StepError, type SectionContext } from '../context.ts';
import { renderMustache } from '../mustache.ts';

interface Wanted {
  data: Buffer;
  symlink: boolean;
  mode: number | undefined;
  uid: number | undefined;
  gid: number | undefined;
}

/** `"000644"` -> { symlink: false, mode: 0o644 }; `"120777"` -> a symlink. Numbers are read as octal digits too. */
export function parseMode(path: string, mode: unknown): { symlink: boolean; mode: number | undefined } {
  if (mode === undefined) return { symlink: false, mode: undefined };
  const text = scalarText(mode);
  if (text === undefined || !/^[0-7]{1,6}$/.test(text)) {
    throw new StepError('files', path, null, `mode must be an octal string such as "000644", not ${JSON.stringify(mode)}`);
  }
  return { symlink: text.length === 6 && text.startsWith('120'), mode: Number.parseInt(text.slice(-4), 8) };
}

async function lookupId(ctx: SectionContext, path: string, database: 'passwd' | 'group', name: unknown): Promise<number | undefined> {
  if (name === undefined) return undefined;
  const text = scalarText(name);
  if (text !== undefined && /^\d+$/.test(text)) return Number(text);
  if (typeof name !== 'string' || name === '')
    throw new StepError('files', path, null, `${database === 'passwd' ? 'owner' : 'group'} must be a name, not ${JSON.stringify(name)}`);
  const result = await ctx.runner.run(['getent', database, name]);
  const id = result.exitCode === 0 ? Number(result.stdout.split(':')[2]) : Number.NaN;
  if (!Number.isInteger(id))
    throw new StepError('files', path, null, `${database === 'passwd' ? 'owner' : 'group'} ${name} does not exist on this machine`);
  return id;
}

async function content(ctx: SectionContext, path: string, meta: Record<string, unknown>): Promise<Buffer> {
  const encoding = meta.encoding ?? 'plain';
  if (encoding !== 'plain' && encoding !== 'base64')
    throw new StepError('files', path, null, `encoding must be plain or base64, not ${JSON.stringify(encoding)}`);
  let text: string | undefined;
  let data: Buffer;
  if ('content' in meta) {
    const value = meta.content;
    if (typeof value === 'string') text = value;
    else if (encoding === 'base64') throw new StepError('files', path, null, 'base64 encoding needs string content');
    else text = JSON.stringify(value, null, 4);
    data = Buffer.from(text, encoding === 'base64' ? 'base64' : 'utf8');
  } else if (typeof meta.source === 'string') {
    try {
      data = await ctx.fetchUrl(meta.source);
    } catch (error) {
      throw new StepError('files', path, null, `could not download ${redactUrl(meta.source)}: ${(error as Error).message}`);
    }
  } else throw new StepError('files', path, null, 'needs content or source');
  if (meta.context === undefined || encoding === 'base64') return data;
  try {
    return Buffer.from(renderMustache(data.toString('utf8'), meta.context));
  } catch (error) {
    throw new StepError('files', path, null, `context: ${(error as Error).message}`);
  }
}

/** Links in a chain a path is followed through before it is given up as a loop (Linux's MAXSYMLINKS). */
const MAX_SYMLINK_HOPS = 40;

/** The file a write to `path` lands in: `path` itself, or the end of its symlink chain (which may not exist yet). */
async function writeTarget(path: string): Promise<string> {
  let target = path;
  for (let hop = 0; hop < MAX_SYMLINK_HOPS; hop++) {
    const stat = await lstat(target).catch(() => undefined);
    if (!stat?.isSymbolicLink()) return target;
    target = resolve(dirname(target), await readlink(target));
  }
  throw new StepError('files', path, null, `too many levels of symbolic links (more than ${MAX_SYMLINK_HOPS})`);
}

async function current(
  path: string,
): Promise<{ data: Buffer | undefined; link: string | undefined; mode: number; uid: number; gid: number } | undefined> {
  const stat = await lstat(path).catch(() => undefined);
  if (!stat) return undefined;
  return {
    data: stat.isFile() ? await readFile(path) : undefined,
    link: stat.isSymbolicLink() ? await readlink(path) : undefined,
    mode: stat.mode & 0o7777,
    uid: stat.uid,
    gid: stat.gid,
  };
}

/** A new file's mode without `mode`: 0666 less the umask, as the original's open(path, 'w') creates it (0644 under 022, 0640 under 027). */
function newFileMode(): number {
  return 0o666 & ~process.umask();
}

async function place(path: string, wanted: Wanted, before: Awaited<ReturnType<typeof current>>): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = join(dirname(path), `.${basename(path)}.cfn-init.${process.pid}.tmp`);
  try {
    await rm(temp, { force: true });
    if (wanted.symlink) await symlink(wanted.data.toString('utf8'), temp);
    else {
      await writeFile(temp, wanted.data, { mode: 0o600 });
      if (wanted.uid !== undefined || wanted.gid !== undefined)
        await chown(temp, wanted.uid ?? before?.uid ?? -1, wanted.gid ?? before?.gid ?? -1);
      await chmod(temp, wanted.mode ?? before?.mode ?? newFileMode());
    }
    await rename(temp, path);
  } finally {
    await rm(temp, { force: true });
  }
}

/** Writes every file `files` lists; records each one whose content, target, mode or ownership changed. */
export async function applyFiles(ctx: SectionContext, files: unknown): Promise<void> {
  if (files === undefined) return;
  if (!isObject(files))
    throw new StepError('files', '(section)', null, `must be an object of {path: {content|source, ...}}, not ${JSON.stringify(files)}`);
  for (const [path, meta] of Object.entries(files)) {
    if (!isAbsolute(path)) throw new StepError('files', path, null, 'the path must be absolute');
    if (!isObject(meta)) throw new StepError('files', path, null, `must be an object, not ${JSON.stringify(meta)}`);
    if ('authentication' in meta) ctx.log.warn('files: authentication is not supported, fetching without it', { section: 'files', path });
    const { symlink: isLink, mode } = parseMode(path, meta.mode);
    const wanted: Wanted = {
      data: await content(ctx, path, meta),
      symlink: isLink,
      mode,
      uid: await lookupId(ctx, path, 'passwd', meta.owner),
      gid: await lookupId(ctx, path, 'group', meta.group),
    };
    // Not through the link when the link itself is wanted; otherwise replacing the link would leave a
    // regular file with the link's own mode (0777) and the target unchanged.
    const target = isLink ? path : await writeTarget(path);
    const before = await current(target);
    const same = isLink
      ? before?.link === wanted.data.toString('utf8')
      : before?.data?.equals(wanted.data) === true &&
        (wanted.mode === undefined || wanted.mode === before.mode) &&
        (wanted.uid === undefined || wanted.uid === before.uid) &&
        (wanted.gid === undefined || wanted.gid === before.gid);
    if (same) {
      ctx.log.info('file unchanged', { section: 'files', path });
      continue;
    }
    try {
      await place(target, wanted, before);
    } catch (error) {
      throw new StepError('files', path, null, (error as Error).message);
    }
    ctx.changes.files.add(path);
    ctx.log.info(isLink ? 'symlink written' : 'file written', {
      section: 'files',
      path,
      ...(target === path ? {} : { target }),
      bytes: wanted.data.length,
      mode: wanted.mode?.toString(8),
    });
  }
}

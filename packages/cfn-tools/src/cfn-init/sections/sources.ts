// sources: {directory: url}. The archive is downloaded into memory (no shell, no curl), its type
// taken from the URL's extension (.tar, .tar.gz/.tgz, .tar.bz2/.tbz2, .zip, .gz, .bz2, GitHub
// tarball/zipball URLs) or else from its first bytes, and unpacked into the directory with tar,
// unzip or bunzip2 run as argv (a single .gz is inflated in-process).
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { redactUrl } from '@hearth/agent-kit/redact';
import type { ProcessResult } from '@hearth/agent-kit/run-process';
import { commandFailed, isObject, StepError, type SectionContext } from '../context.ts';

/** What a source unpacks as. */
export type SourceType = 'tar' | 'tgz' | 'tbz2' | 'zip' | 'gz' | 'bz2';

/** The type the URL's path names, or undefined when it names none. */
export function sourceTypeFromUrl(url: string): SourceType | undefined {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  const path = (parsed?.pathname ?? url).replace(/\/+$/, '').toLowerCase();
  if (/\.(tar\.gz|tgz)$/.test(path)) return 'tgz';
  if (/\.(tar\.bz2|tbz2?)$/.test(path)) return 'tbz2';
  if (path.endsWith('.tar')) return 'tar';
  if (path.endsWith('.zip')) return 'zip';
  if (path.endsWith('.gz')) return 'gz';
  if (path.endsWith('.bz2')) return 'bz2';
  if (parsed?.hostname.endsWith('github.com')) {
    const kind = path.split('/').at(-2);
    if (kind === 'tarball') return 'tgz';
    if (kind === 'zipball') return 'zip';
  }
  return undefined;
}

const isTar = (data: Buffer): boolean => data.length > 262 && data.subarray(257, 262).toString('latin1') === 'ustar';

/** The type the content's first bytes show (a .bz2 is told apart from a .tar.bz2 later, by tar). */
export function sourceTypeFromContent(data: Buffer): SourceType | undefined {
  if (data[0] === 0x1f && data[1] === 0x8b) {
    try {
      return isTar(gunzipSync(data)) ? 'tgz' : 'gz';
    } catch {
      return undefined;
    }
  }
  if (data.subarray(0, 3).toString('latin1') === 'BZh') return 'bz2';
  if (data.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04]))) return 'zip';
  if (isTar(data)) return 'tar';
  return undefined;
}

/** The file name a single compressed file unpacks to: the URL's last path part without .gz/.bz2. */
function singleFileName(url: string): string {
  const path = URL.canParse(url) ? new URL(url).pathname : url;
  const name = basename(path.replace(/\/+$/, '')).replace(/\.(gz|bz2)$/i, '');
  return name === '' ? 'source' : name;
}

async function unpack(ctx: SectionContext, dir: string, url: string, data: Buffer, type: SourceType, scratch: string): Promise<void> {
  const fail = (result: ProcessResult): never => {
    throw new StepError('sources', dir, result.exitCode, commandFailed(result));
  };
  if (type === 'gz') {
    await writeFile(join(dir, singleFileName(url)), gunzipSync(data));
    return;
  }
  const archive = join(scratch, type === 'bz2' ? `${singleFileName(url)}.bz2` : 'archive');
  await writeFile(archive, data);
  if (type === 'zip') {
    const result = await ctx.runner.run(['unzip', '-o', '-q', archive, '-d', dir]);
    if (result.exitCode !== 0) fail(result);
    return;
  }
  if (type === 'bz2') {
    // A .bz2 by content may still be a tarball: tar says so by listing it.
    const listed = await ctx.runner.run(['tar', '-t', '-j', '-f', archive]);
    if (listed.exitCode !== 0) {
      const target = join(dir, basename(archive));
      await writeFile(target, data);
      const result = await ctx.runner.run(['bunzip2', '-f', target]);
      if (result.exitCode !== 0) fail(result);
      return;
    }
  }
  const result = await ctx.runner.run(['tar', '-x', '-f', archive, '-C', dir]);
  if (result.exitCode !== 0) fail(result);
}

/** Downloads and unpacks every source; records each directory as changed. */
export async function applySources(ctx: SectionContext, sources: unknown): Promise<void> {
  if (sources === undefined) return;
  if (!isObject(sources))
    throw new StepError('sources', '(section)', null, `must be an object of {directory: url}, not ${JSON.stringify(sources)}`);
  for (const [dir, url] of Object.entries(sources)) {
    if (typeof url !== 'string' || url === '')
      throw new StepError('sources', dir, null, `the source must be a URL, not ${JSON.stringify(url)}`);
    let data: Buffer;
    try {
      data = await ctx.fetchUrl(url);
    } catch (error) {
      // A source is often a pre-signed URL (S3 X-Amz-Signature, a Swift temp_url_sig): its signature is a credential.
      throw new StepError('sources', dir, null, `could not download ${redactUrl(url)}: ${(error as Error).message}`);
    }
    const type = sourceTypeFromUrl(url) ?? sourceTypeFromContent(data);
    if (type === undefined)
      throw new StepError('sources', dir, null, `${redactUrl(url)} is not a tar, tar.gz, tar.bz2, zip, gz or bz2 archive`);
    await mkdir(dir, { recursive: true });
    const scratch = await mkdtemp(join(tmpdir(), 'cfn-init-source-'));
    try {
      await unpack(ctx, dir, url, data, type, scratch);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
    ctx.changes.sources.add(dir);
    ctx.log.info('source unpacked', { section: 'sources', dir, url: redactUrl(url), type, bytes: data.length });
  }
}

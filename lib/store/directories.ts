// Directories of a store, as Hadoop's file systems show them to Paimon's filesystem catalog:
// a local directory is one, and on S3 a directory is a key prefix ending in '/' (a common
// prefix of a delimited listing, or S3A's zero-byte marker object `dir/` that `mkdirs` puts).
// The object-store port has no directories; a warehouse needs them to list and create
// databases and tables (lib/api/warehouse.ts). Each store kind is served by what it has:
// readdir and mkdir on disk, a delimited ListObjectsV2 on S3, key prefixes in memory.

import { mkdir, readdir, rm, stat } from 'node:fs/promises'
import { sep } from 'node:path'
import { DeleteObjectsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3'
import { StoreError, StrataInputError } from '../errors.ts'
import { LocalFileStore } from './local-store.ts'
import type { ObjectStore } from './object-store.ts'
import { S3Store } from './s3-store.ts'

/** A directory key: '' (the root) or '/'-separated segments without a trailing '/'. */
function checkDirectory(store: ObjectStore, dir: string): void {
  if (dir !== '' && dir.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    throw new StrataInputError(`directory '${dir}' is not valid for ${store.uri}: expected '/'-separated non-empty segments, none '.' or '..'`)
  }
}

const under = (dir: string): string => (dir === '' ? '' : `${dir}/`)

function localPath(store: LocalFileStore, dir: string): string {
  return dir === '' ? store.root : store.root + sep + dir.split('/').join(sep)
}

const s3Key = (store: S3Store, key: string): string => (store.prefix === '' ? key : `${store.prefix}/${key}`)

function s3Error(store: S3Store, op: string, dir: string, err: unknown): StoreError {
  return new StoreError(`S3 ${op} ${store.uri}/${dir} failed: ${(err as Error)?.message ?? String(err)}`, { cause: err })
}

/** The names of the directories directly inside `dir`, sorted. */
export async function listDirectories(store: ObjectStore, dir: string): Promise<string[]> {
  checkDirectory(store, dir)
  if (store instanceof LocalFileStore) {
    let entries
    try {
      entries = await readdir(localPath(store, dir), { withFileTypes: true })
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT' || code === 'ENOTDIR') return []
      throw err
    }
    return entries.filter((e) => e.isDirectory()).map((e) => e.name).sort()
  }
  if (store instanceof S3Store) return listS3Directories(store, dir)
  // any other store: the first segment of every key below (a full listing)
  const names = new Set<string>()
  for (const info of await store.list(under(dir))) {
    const rest = info.key.slice(under(dir).length)
    const slash = rest.indexOf('/')
    if (slash > 0) names.add(rest.slice(0, slash))
  }
  return [...names].sort()
}

async function listS3Directories(store: S3Store, dir: string): Promise<string[]> {
  const prefix = s3Key(store, under(dir))
  const names: string[] = []
  let token: string | undefined
  do {
    let res
    try {
      res = await store.client.send(new ListObjectsV2Command({ Bucket: store.bucket, Prefix: prefix, Delimiter: '/', ContinuationToken: token }))
    } catch (err) {
      throw s3Error(store, 'ListObjectsV2', dir, err)
    }
    for (const p of res.CommonPrefixes ?? []) {
      const name = p.Prefix?.slice(prefix.length, -1)
      if (name) names.push(name)
    }
    token = res.IsTruncated ? res.NextContinuationToken : undefined
  } while (token !== undefined)
  return names.sort()
}

/** Whether `dir` exists: a local directory, or on S3 and in memory any key under it (a marker too). */
export async function directoryExists(store: ObjectStore, dir: string): Promise<boolean> {
  checkDirectory(store, dir)
  if (store instanceof LocalFileStore) {
    try {
      return (await stat(localPath(store, dir))).isDirectory()
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT' || code === 'ENOTDIR') return false
      throw err
    }
  }
  if (store instanceof S3Store) {
    try {
      const res = await store.client.send(new ListObjectsV2Command({ Bucket: store.bucket, Prefix: s3Key(store, under(dir)), MaxKeys: 1 }))
      return (res.KeyCount ?? res.Contents?.length ?? 0) > 0
    } catch (err) {
      throw s3Error(store, 'ListObjectsV2', dir, err)
    }
  }
  return (await store.list(under(dir))).length > 0
}

/**
 * Makes `dir` (and its parents): mkdir on disk; elsewhere the zero-byte marker `dir/` that
 * Hadoop's S3A `mkdirs` puts, so an empty directory shows in a delimited listing.
 */
export async function makeDirectory(store: ObjectStore, dir: string): Promise<void> {
  checkDirectory(store, dir)
  if (dir === '') return
  if (store instanceof LocalFileStore) {
    await mkdir(localPath(store, dir), { recursive: true })
    return
  }
  await store.put(`${dir}/`, new Uint8Array(0))
}

/** Deletes `dir` and everything under it (Paimon's `fileIO.delete(path, true)`). */
export async function removeDirectory(store: ObjectStore, dir: string): Promise<void> {
  checkDirectory(store, dir)
  if (dir === '') throw new StrataInputError(`removeDirectory: refusing to delete the root of ${store.uri}; expected a directory under it`)
  if (store instanceof LocalFileStore) {
    await rm(localPath(store, dir), { recursive: true, force: true })
    return
  }
  const keys = (await store.list(under(dir))).map((o) => o.key)
  // objects first, the marker last, so a delete that fails midway leaves the directory listed
  const objects = keys.filter((k) => k !== `${dir}/`)
  if (store instanceof S3Store) await deleteS3Objects(store, dir, objects)
  else for (let i = 0; i < objects.length; i += 16) await Promise.all(objects.slice(i, i + 16).map((k) => store.delete(k)))
  await store.delete(`${dir}/`)
}

/** DeleteObjects, 1,000 keys a request (S3's limit); a key S3 could not delete fails the call, naming it. */
async function deleteS3Objects(store: S3Store, dir: string, keys: string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 1000) {
    const batch = keys.slice(i, i + 1000)
    let res
    try {
      res = await store.client.send(new DeleteObjectsCommand({ Bucket: store.bucket, Delete: { Objects: batch.map((k) => ({ Key: s3Key(store, k) })), Quiet: true } }))
    } catch (err) {
      throw s3Error(store, 'DeleteObjects', dir, err)
    }
    const failed = res.Errors?.[0]
    if (failed) throw new StoreError(`S3 DeleteObjects ${store.uri}/${dir} failed for ${res.Errors!.length} key(s), first ${failed.Key}: ${failed.Code ?? 'Error'} ${failed.Message ?? ''}`.trim())
  }
}

import { createRequire } from 'node:module'

/**
 * s3rver (a local S3 for tests) with a bug of its own fixed for the S3 replica test: its
 * filesystem store skips directories two levels below the prefix, so a delimited listing
 * (`?delimiter=/&prefix=ward/generations/`) misses the "common prefixes" of nested keys, and
 * Litestream finds no generation: replication writes, but restore answers "no matching backups
 * found". Here a delimited listing is worked out from the full (undelimited) one. A bug of the
 * test server only: real S3 and S3-compatible stores list as specified.
 */
interface Listing {
  objects: { key: string }[]
  commonPrefixes: string[]
  isTruncated: boolean
}
type ListObjects = (bucket: string, options: Record<string, unknown>) => Promise<Listing>

const require = createRequire(import.meta.url)
const S3rver = require('s3rver') as new (
  options: object,
) => { run(): Promise<{ port: number }>; close(): Promise<void> }
const FilesystemStore = require('s3rver/lib/stores/filesystem') as { prototype: { listObjects: ListObjects } }

const original = FilesystemStore.prototype.listObjects
FilesystemStore.prototype.listObjects = async function listDelimited(bucket, options) {
  const { delimiter = '', prefix = '', maxKeys = Number.POSITIVE_INFINITY } = options as Record<string, never>
  if (!delimiter) return original.call(this, bucket, options)
  const all = await original.call(this, bucket, { ...options, delimiter: '', maxKeys: Number.POSITIVE_INFINITY })
  const commonPrefixes = new Set<string>()
  const objects: Listing['objects'] = []
  let isTruncated = false
  for (const object of all.objects) {
    const at = object.key.slice((prefix as string).length).indexOf(delimiter)
    if (at !== -1) commonPrefixes.add(object.key.slice(0, (prefix as string).length + at + 1))
    else if (objects.length < maxKeys) objects.push(object)
    else isTruncated = true
  }
  return { objects, commonPrefixes: [...commonPrefixes].sort(), isTruncated }
}

/** s3rver on 127.0.0.1 with one bucket, its files in `dir`; credentials S3RVER / S3RVER. */
export async function startS3(dir: string, bucket: string) {
  const server = new S3rver({
    directory: dir,
    address: '127.0.0.1',
    port: 0,
    silent: true,
    configureBuckets: [{ name: bucket }],
  })
  const { port } = await server.run()
  return { endpoint: `http://127.0.0.1:${port}`, accessKey: 'S3RVER', secretKey: 'S3RVER', stop: () => server.close() }
}

// Avro object container files (Avro 1.11 spec, "Object Container Files") as Paimon writes
// its manifest lists, manifests and index manifests (docs/format.md "Avro manifests").
//
// avsc encodes and decodes the datums; the container (header, blocks, codecs) is framed
// here so that reading and writing stay synchronous and the writer schema is embedded
// exactly as given. Values cross this module's boundary in plain form: Avro `long` is
// bigint, `bytes` is Uint8Array, a union value is the bare value or null.

import { randomBytes } from 'node:crypto'
import * as zlib from 'node:zlib'
import avro from 'avsc'
import { decompress as zstdDecompress } from 'fzstd'
import { snappyUncompress } from 'hyparquet'
import { snappyCompress } from './snappy.ts'
import { StrataInputError } from '../errors.ts'

/**
 * The codecs Strata writes Avro files with: 'none' is Avro's `null` codec, 'zstd' its
 * `zstandard`. Paimon's `manifest.compression` (api:CoreOptions.java, default `zstd`) takes
 * Avro's names, which lib/table/options.ts maps onto these.
 */
export type ManifestCompression = 'none' | 'zstd' | 'deflate' | 'snappy'

export const MANIFEST_COMPRESSIONS: readonly ManifestCompression[] = ['none', 'zstd', 'deflate', 'snappy']

/** Avro codec name written to `avro.codec` for each `manifest.compression` value. */
export const AVRO_CODEC_NAME: Record<ManifestCompression, string> = {
  none: 'null',
  zstd: 'zstandard',
  deflate: 'deflate',
  snappy: 'snappy',
}

export interface AvroWriteOptions {
  /** `file.compression.zstd-level`, which Paimon passes to Avro's zstandard codec (default 1). */
  zstdLevel?: number
  /** The 16-byte sync marker; random per file unless given (Avro DataFileWriter default). */
  syncMarker?: Uint8Array
  /** Bytes of encoded records after which a block is closed (Avro default sync interval 64000). */
  syncInterval?: number
}

const MAGIC = Uint8Array.of(0x4f, 0x62, 0x6a, 0x01) // "Obj" 1
const SYNC_SIZE = 16
const DEFAULT_SYNC_INTERVAL = 64000

// node:zlib gained zstd in Node 22.15 / 23.8; @types/node 20 does not declare it.
interface ZstdZlib {
  zstdCompressSync?: (data: Uint8Array, options?: { params?: Record<number, number> }) => Buffer
  constants: Record<string, number>
}
const zstdZlib = zlib as unknown as ZstdZlib

/** Whether this runtime can write `compression` (zstd needs node:zlib zstd, Node ≥ 22.15). */
export function canWriteCompression(c: ManifestCompression): boolean {
  if (c === 'zstd') return typeof zstdZlib.zstdCompressSync === 'function'
  return MANIFEST_COMPRESSIONS.includes(c)
}

/**
 * Write an Avro object container file holding `records` (plain values, see top of file)
 * under the writer schema `schema`, which is embedded as its compact JSON. Like Avro's
 * DataFileWriter a list with no records still yields a header-only file.
 */
export function writeAvroFile(
  schema: object,
  records: unknown[],
  compression: ManifestCompression,
  { zstdLevel = 1, syncMarker, syncInterval = DEFAULT_SYNC_INTERVAL }: AvroWriteOptions = {},
): Uint8Array {
  const codec = avroCodecFor(compression)
  const sync = syncMarker ?? randomBytes(SYNC_SIZE)
  if (sync.length !== SYNC_SIZE) {
    throw new Error(`Avro sync marker: length ${sync.length}, expected ${SYNC_SIZE} bytes`)
  }
  const schemaJson = JSON.stringify(schema)
  const { type, conv } = compiledFor(schemaJson)

  const out: Uint8Array[] = [MAGIC]
  const meta = new ByteSink()
  meta.long(2)
  meta.bytes(utf8('avro.schema'))
  meta.bytes(utf8(schemaJson))
  meta.bytes(utf8('avro.codec'))
  meta.bytes(utf8(codec))
  meta.long(0)
  out.push(meta.take(), sync)

  let pending: Buffer[] = []
  let pendingBytes = 0
  const flush = () => {
    const data = compressBlock(codec, Buffer.concat(pending, pendingBytes), zstdLevel)
    const head = new ByteSink()
    head.long(pending.length)
    head.long(data.length)
    out.push(head.take(), data, sync)
    pending = []
    pendingBytes = 0
  }
  records.forEach((record, i) => {
    const buf = type.toBuffer(conv.toAvro(record, `record #${i}`))
    pending.push(buf)
    pendingBytes += buf.length
    if (pendingBytes >= syncInterval) flush()
  })
  if (pending.length > 0) flush()
  return concat(out)
}

/** Read an Avro object container file with its own writer schema; see top of file for values. */
export function readAvroFile(bytes: Uint8Array): { schema: object; records: any[] } {
  const records: any[] = []
  const schemaJson = forEachBlock(bytes, (json) => ({ ...compiledFor(json), resolver: undefined }), (value, conv) => records.push(conv.fromAvro(value)))
  return { schema: JSON.parse(schemaJson), records }
}

/** Walks an Avro container file: header, then every record of every block, decoded by `typeOf(schema)`. */
function forEachBlock(bytes: Uint8Array, typeOf: (schemaJson: string) => { type: avro.Type; conv: Converter; resolver: any }, each: (value: any, conv: Converter) => void): string {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const src = new ByteSource(buf)
  const { schemaJson, codec, sync } = readHeader(buf, src)
  if (!READ_CODECS.includes(codec)) {
    throw new Error(`Avro file uses codec '${codec}', which Strata does not decode; expected one of ${READ_CODECS.join(', ')} (Paimon writes the codec manifest.compression, file.compression or avro.codec names)`)
  }
  const { type, conv, resolver } = typeOf(schemaJson)

  while (src.pos < buf.length) {
    const count = src.long()
    const size = src.long()
    if (count < 0 || size < 0) throw new Error(`Avro file invalid (block at byte ${src.pos}: count ${count}, size ${size})`)
    const data = decompressBlock(codec, src.take(size))
    let pos = 0
    for (let i = 0; i < count; i++) {
      const { value, offset } = type.decode(data, pos, resolver)
      if (offset < 0) throw new Error(`Avro file invalid (block ends inside record ${i} of ${count})`)
      each(value, conv)
      pos = offset
    }
    if (pos !== data.length) {
      throw new Error(`Avro file invalid (block of ${count} records has ${data.length - pos} trailing bytes)`)
    }
    if (!src.take(SYNC_SIZE).equals(sync)) throw new Error('Avro file invalid (sync marker mismatch after block)')
  }
  return schemaJson
}

/** An Avro container's header: writer schema (JSON text), codec name and sync marker; `src` is left after it. */
function readHeader(buf: Buffer, src: ByteSource): { schemaJson: string; codec: string; sync: Buffer } {
  if (buf.length < MAGIC.length || !MAGIC.every((b, i) => buf[i] === b)) {
    throw new Error('Avro file invalid (does not start with magic "Obj\\x01")')
  }
  src.pos = MAGIC.length
  const meta = new Map<string, Buffer>()
  for (let n = src.long(); n !== 0; n = src.long()) {
    if (n < 0) {
      src.long() // block byte size, present when the count is negative
      n = -n
    }
    for (let i = 0; i < n; i++) {
      const key = src.bytes().toString('utf8')
      meta.set(key, src.bytes())
    }
  }
  const sync = src.take(SYNC_SIZE)
  const schemaBytes = meta.get('avro.schema')
  if (!schemaBytes) throw new Error('Avro file invalid (header has no avro.schema)')
  return { schemaJson: schemaBytes.toString('utf8'), codec: meta.get('avro.codec')?.toString('utf8') ?? 'null', sync }
}

/** The writer schema and codec name of an Avro container file, from its header alone. */
export function avroFileHeader(bytes: Uint8Array): { schema: any; codec: string } {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const { schemaJson, codec } = readHeader(buf, new ByteSource(buf))
  return { schema: JSON.parse(schemaJson), codec }
}

/** Whether lib/format/avro.ts decodes Avro codec `codec` (null, deflate, snappy, zstandard). */
export function canReadAvroCodec(codec: string): boolean {
  return READ_CODECS.includes(codec)
}

/**
 * Records of an Avro file read through a projection of its writer schema: `project` gets
 * the writer schema and returns a reader schema with fewer fields (same names), and avsc's
 * schema resolution skips the rest without building them. Each record's values come back
 * as readAvroFile would give them, for the fields kept.
 */
export function readAvroFileProjected(bytes: Uint8Array, projectionKey: string, project: (writerSchema: any) => any): any[] {
  const records: any[] = []
  forEachBlock(bytes, (schemaJson) => projectedFor(schemaJson, projectionKey, project), (value, conv) => records.push(conv.fromAvro(value)))
  return records
}

const projectedCache = new Map<string, { type: avro.Type; conv: Converter; resolver: any }>()

/**
 * `readAvroFileProjected` for files of flat records (data files): avsc decodes each record
 * as it is, with no conversion pass: a ["null", T] union's value is the bare value or null, a
 * long (logical types too) a bigint, bytes a Buffer (a Uint8Array), a string a string.
 */
export function readAvroFileFlat(bytes: Uint8Array, projectionKey: string, project: (writerSchema: any) => any): any[] {
  const records: any[] = []
  forEachBlock(bytes, (schemaJson) => flatFor(schemaJson, projectionKey, project), (value) => records.push(value))
  return records
}

const flatCache = new Map<string, { type: avro.Type; conv: Converter; resolver: any }>()
const IDENTITY: Converter = { toAvro: (v) => v, fromAvro: (v) => v }

function flatFor(schemaJson: string, key: string, project: (writerSchema: any) => any): { type: avro.Type; conv: Converter; resolver: any } {
  const cacheKey = `${key}\u0000${schemaJson}`
  let hit = flatCache.get(cacheKey)
  if (!hit) {
    // (a fresh options object per schema: avsc keeps its registry of names in it)
    const opts = () => ({ typeHook: longAsBigint, wrapUnions: 'auto' as const, omitRecordMethods: true })
    const writer = avro.Type.forSchema(JSON.parse(schemaJson), opts())
    const type = avro.Type.forSchema(project(JSON.parse(schemaJson)), opts())
    hit = { type, conv: IDENTITY, resolver: (type as any).createResolver(writer) }
    remember(flatCache, cacheKey, hit)
  }
  return hit
}

/**
 * Compiled schemas kept per process, in each of the three caches. They are keyed by the writer
 * schema a file embeds, a handful for Paimon's manifest formats; past the bound the oldest
 * goes. One takes about 10–30 KiB (avsc's compiled type of a manifest schema measured 11 KiB,
 * plus its converter and the schema text).
 */
export const MAX_COMPILED_SCHEMAS = 64

function remember<V>(cache: Map<string, V>, key: string, value: V): void {
  if (cache.size >= MAX_COMPILED_SCHEMAS) cache.delete(cache.keys().next().value!)
  cache.set(key, value)
}

function projectedFor(schemaJson: string, key: string, project: (writerSchema: any) => any): { type: avro.Type; conv: Converter; resolver: any } {
  const cacheKey = `${key}\u0000${schemaJson}`
  let hit = projectedCache.get(cacheKey)
  if (!hit) {
    const writer = compiledFor(schemaJson).type
    const { type, conv } = compiledFor(JSON.stringify(project(JSON.parse(schemaJson))))
    hit = { type, conv, resolver: (type as any).createResolver(writer) }
    remember(projectedCache, cacheKey, hit)
  }
  return hit
}

// ---- codecs (Avro spec "Required Codecs" / "Optional Codecs") ----

const READ_CODECS = ['null', 'deflate', 'snappy', 'zstandard']

function avroCodecFor(compression: ManifestCompression): string {
  const codec = AVRO_CODEC_NAME[compression]
  if (codec === undefined) {
    throw new StrataInputError(`manifest.compression: '${compression}', expected one of ${MANIFEST_COMPRESSIONS.join(', ')}`)
  }
  if (!canWriteCompression(compression)) {
    throw new StrataInputError(
      `manifest.compression: '${compression}' cannot be written on Node ${process.versions.node} ` +
        `(node:zlib has no zstd before Node 22.15); set manifest.compression to 'deflate'`,
    )
  }
  return codec
}

function compressBlock(codec: string, data: Buffer, zstdLevel: number): Uint8Array {
  switch (codec) {
    case 'null':
      return data
    case 'deflate':
      // Avro's deflate codec is raw DEFLATE (RFC 1951), no zlib header.
      return zlib.deflateRawSync(data)
    case 'snappy': {
      const body = snappyCompress(data)
      const out = new Uint8Array(body.length + 4)
      out.set(body)
      new DataView(out.buffer).setUint32(body.length, zlib.crc32(data) >>> 0)
      return out
    }
    case 'zstandard':
      return zstdZlib.zstdCompressSync!(data, {
        params: { [zstdZlib.constants.ZSTD_c_compressionLevel]: zstdLevel },
      })
    default:
      throw new Error(`Avro codec '${codec}' cannot be written`)
  }
}

function decompressBlock(codec: string, data: Buffer): Buffer {
  switch (codec) {
    case 'null':
      return data
    case 'deflate':
      return zlib.inflateRawSync(data)
    case 'snappy': {
      if (data.length < 4) throw new Error('Avro snappy block invalid (shorter than its CRC32)')
      const body = data.subarray(0, data.length - 4)
      const out = Buffer.alloc(snappyLength(body))
      snappyUncompress(body, out)
      const crc = data.readUInt32BE(data.length - 4)
      if ((zlib.crc32(out) >>> 0) !== crc) throw new Error('Avro snappy block invalid (CRC32 mismatch)')
      return out
    }
    case 'zstandard': {
      const out = zstdDecompress(data)
      return Buffer.from(out.buffer, out.byteOffset, out.byteLength)
    }
    default:
      throw new Error(`Avro codec '${codec}' cannot be read`)
  }
}

/** Uncompressed length from a snappy block's varint preamble. */
function snappyLength(body: Uint8Array): number {
  let n = 0
  for (let i = 0, shift = 0; i < body.length && i < 5; i++, shift += 7) {
    n += (body[i] & 0x7f) * 2 ** shift
    if (body[i] < 0x80) return n
  }
  throw new Error('Avro snappy block invalid (bad length preamble)')
}

// ---- datum conversion between plain values and avsc's representation ----

interface Converter {
  toAvro(value: unknown, path: string): unknown
  fromAvro(value: any): unknown
}

const INT_MIN = -(2 ** 31)
const INT_MAX = 2 ** 31 - 1
const LONG_MIN = -(2n ** 63n)
const LONG_MAX = 2n ** 63n - 1n

// avsc unpacks a long to its 8 little-endian bytes before handing it to these methods.
const BigLongType = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => buf.readBigInt64LE(0),
  toBuffer: (n: bigint) => {
    const buf = Buffer.alloc(8)
    buf.writeBigInt64LE(n)
    return buf
  },
  fromJSON: (json: unknown) => BigInt(json as string),
  toJSON: (n: bigint) => n.toString(),
  isValid: (n: unknown) => typeof n === 'bigint' && n >= LONG_MIN && n <= LONG_MAX,
  compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
})

const compiledCache = new Map<string, { type: avro.Type; conv: Converter }>()

/** avsc type hook: every long, including logical ones (timestamp-millis), decodes to bigint. */
function longAsBigint(s: any): avro.Type | undefined {
  return s === 'long' || (s && s.type === 'long') ? (BigLongType as unknown as avro.Type) : undefined
}

function compiledFor(schemaJson: string): { type: avro.Type; conv: Converter } {
  let hit = compiledCache.get(schemaJson)
  if (!hit) {
    const type = avro.Type.forSchema(JSON.parse(schemaJson), {
      typeHook: longAsBigint,
      // Wrapped unions name their branch, so no value has to be guessed into a branch.
      wrapUnions: 'always',
      omitRecordMethods: true,
    })
    hit = { type, conv: converterFor(type, new Map()) }
    remember(compiledCache, schemaJson, hit)
  }
  return hit
}

function converterFor(type: any, seen: Map<unknown, Converter>): Converter {
  const known = seen.get(type)
  if (known) return known
  const name: string = type.typeName
  switch (name) {
    case 'record':
    case 'error':
      return recordConverter(type, seen)
    case 'array': {
      const conv: Converter = { toAvro: () => undefined, fromAvro: () => undefined }
      seen.set(type, conv)
      const items = converterFor(type.itemsType, seen)
      conv.toAvro = (v, path) => {
        if (!Array.isArray(v)) throw invalid(path, v, 'an array')
        return v.map((x, i) => items.toAvro(x, `${path}[${i}]`))
      }
      conv.fromAvro = (v: any[]) => v.map((x) => items.fromAvro(x))
      return conv
    }
    case 'map': {
      const values = converterFor(type.valuesType, seen)
      return {
        toAvro: (v, path) => {
          if (v === null || typeof v !== 'object' || Array.isArray(v)) throw invalid(path, v, 'a map object')
          return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, values.toAvro(x, `${path}.${k}`)]))
        },
        fromAvro: (v: Record<string, any>) => Object.fromEntries(Object.entries(v).map(([k, x]) => [k, values.fromAvro(x)])),
      }
    }
    case 'union:wrapped':
      return unionConverter(type, seen)
    case 'abstract:long':
      return {
        toAvro: (v, path) => {
          if (typeof v === 'bigint' && v >= LONG_MIN && v <= LONG_MAX) return v
          if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v)
          throw invalid(path, v, 'a long (bigint in [-2^63, 2^63-1])')
        },
        fromAvro: (v) => v,
      }
    case 'int':
      return {
        toAvro: (v, path) => {
          if (Number.isInteger(v) && (v as number) >= INT_MIN && (v as number) <= INT_MAX) return v
          throw invalid(path, v, 'an int (integer in [-2^31, 2^31-1])')
        },
        fromAvro: (v) => v,
      }
    case 'bytes':
    case 'fixed':
      return {
        toAvro: (v, path) => {
          if (!(v instanceof Uint8Array)) throw invalid(path, v, 'bytes (Uint8Array)')
          return Buffer.from(v.buffer, v.byteOffset, v.byteLength)
        },
        fromAvro: (v: Buffer) => new Uint8Array(v),
      }
    case 'string':
    case 'enum':
      return primitive(name, (v) => typeof v === 'string')
    case 'boolean':
      return primitive(name, (v) => typeof v === 'boolean')
    case 'float':
    case 'double':
      return primitive(name, (v) => typeof v === 'number')
    case 'null':
      return primitive(name, (v) => v === null)
    default:
      throw new Error(`Avro type '${name}' is not supported here`)
  }
}

function recordConverter(type: any, seen: Map<unknown, Converter>): Converter {
  const conv: Converter = { toAvro: () => undefined, fromAvro: () => undefined }
  seen.set(type, conv)
  const fields = (type.fields as any[]).map((f) => ({
    name: f.name as string,
    conv: converterFor(f.type, seen),
    nullable: f.type.typeName === 'union:wrapped' && f.type.types.some((t: any) => t.typeName === 'null'),
  }))
  conv.toAvro = (v, path) => {
    if (v === null || typeof v !== 'object') throw invalid(path, v, `a record ${type.name}`)
    const rec = v as Record<string, unknown>
    const out: Record<string, unknown> = {}
    for (const f of fields) {
      const x = rec[f.name]
      if (x === undefined && !f.nullable) throw new Error(`${path}.${f.name}: missing, expected a value`)
      out[f.name] = f.conv.toAvro(x, `${path}.${f.name}`)
    }
    return out
  }
  conv.fromAvro = (v: any) => {
    const out: Record<string, unknown> = {}
    for (const f of fields) out[f.name] = f.conv.fromAvro(v[f.name])
    return out
  }
  return conv
}

function unionConverter(type: any, seen: Map<unknown, Converter>): Converter {
  const branches = (type.types as any[]).map((t) => ({
    branch: t.branchName as string,
    isNull: t.typeName === 'null',
    conv: converterFor(t, seen),
  }))
  const byName = new Map(branches.map((b) => [b.branch, b]))
  const hasNull = branches.some((b) => b.isNull)
  const valued = branches.filter((b) => !b.isNull)
  return {
    toAvro: (v, path) => {
      if (v === null || v === undefined) {
        if (hasNull) return null
        throw invalid(path, v, 'a value (union has no null branch)')
      }
      // Paimon only writes ["null", T]; with several value branches take the first that fits.
      let firstError: unknown
      for (const b of valued) {
        try {
          return { [b.branch]: b.conv.toAvro(v, path) }
        } catch (e) {
          firstError ??= e
        }
      }
      throw firstError ?? invalid(path, v, 'null')
    },
    fromAvro: (v: any) => {
      if (v === null) return null
      const key = Object.keys(v)[0]
      const b = byName.get(key)
      if (!b) throw new Error(`Avro union value names unknown branch '${key}'`)
      return b.conv.fromAvro(v[key])
    },
  }
}

function primitive(name: string, ok: (v: unknown) => boolean): Converter {
  return {
    toAvro: (v, path) => {
      if (!ok(v)) throw invalid(path, v, `a ${name}`)
      return v
    },
    fromAvro: (v) => v,
  }
}

function invalid(path: string, value: unknown, expected: string): Error {
  return new Error(`${path}: ${describe(value)}, expected ${expected}`)
}

function describe(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n`
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)
  if (value instanceof Uint8Array) return `${value.constructor.name}(${value.length})`
  if (Array.isArray(value)) return `array(${value.length})`
  if (value !== null && typeof value === 'object') return 'object'
  return String(value)
}

// ---- Avro binary primitives for the container framing ----

class ByteSink {
  private parts: number[] = []
  private chunks: Uint8Array[] = []

  /** zig-zag varint (Avro long) for framing counts and sizes, all well below 2^53. */
  long(n: number): void {
    let z = n >= 0 ? n * 2 : -n * 2 - 1
    while (z >= 0x80) {
      this.parts.push((z % 0x80) | 0x80)
      z = Math.floor(z / 0x80)
    }
    this.parts.push(z)
  }

  bytes(b: Uint8Array): void {
    this.long(b.length)
    this.chunks.push(Uint8Array.from(this.parts), b)
    this.parts = []
  }

  take(): Uint8Array {
    this.chunks.push(Uint8Array.from(this.parts))
    const out = concat(this.chunks)
    this.parts = []
    this.chunks = []
    return out
  }
}

class ByteSource {
  pos = 0
  constructor(private readonly buf: Buffer) {}

  long(): number {
    let z = 0
    for (let shift = 0; ; shift += 7) {
      if (this.pos >= this.buf.length) throw new Error('Avro file invalid (truncated)')
      if (shift > 49) throw new Error(`Avro file invalid (varint too long at byte ${this.pos})`)
      const b = this.buf[this.pos++]
      z += (b & 0x7f) * 2 ** shift
      if (b < 0x80) break
    }
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2
  }

  bytes(): Buffer {
    const n = this.long()
    if (n < 0) throw new Error(`Avro file invalid (negative length ${n} at byte ${this.pos})`)
    return this.take(n)
  }

  take(n: number): Buffer {
    if (this.pos + n > this.buf.length) throw new Error('Avro file invalid (truncated)')
    const out = this.buf.subarray(this.pos, this.pos + n)
    this.pos += n
    return out
  }
}

function utf8(s: string): Uint8Array {
  return Buffer.from(s, 'utf8')
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

/** Compiled schemas held now by the three caches together (each holds at most MAX_COMPILED_SCHEMAS). */
export function compiledSchemaCount(): number {
  return compiledCache.size + projectedCache.size + flatCache.size
}

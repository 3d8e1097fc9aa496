// A table handle: its store, its latest schema, and the managers every operation shares.

import { FileStoreCommit } from '../commit/commit.ts'
import { LandedCommits } from '../commit/landed.ts'
import { ManifestIO } from '../manifest/manifests.ts'
import { SnapshotManager } from '../manifest/snapshot-manager.ts'
import { ByteLru } from '../manifest/byte-cache.ts'
import type { DataFileFooter, FooterCache } from '../format/data-file.ts'
import { type MergeEngineConfig, parseMergeEngineConfig } from '../lsm/merge-function.ts'
import { openStore } from '../store/open-store.ts'
import type { ObjectStore } from '../store/object-store.ts'
import { type DataField, type TableSchema, StrataInputError } from '../types.ts'
import { formatDataType } from './data-type.ts'
import { SCHEMA_DIR, schemaKey } from './paths.ts'
import { type SchemaView, createSchema, describeSchema, parseSchema, serializeSchema } from './schema.ts'

const decoder = new TextDecoder()

/** What a process decides about a handle, as opposed to the table's own options. */
export interface TableOpenOptions {
  /** bound of the handle's metadata cache in stored bytes (lib/manifest/byte-cache.ts) */
  metadataCacheBytes?: number
  /** bound of the handle's data-file footer cache, in bytes of memory (default DEFAULT_FOOTER_CACHE_BYTES) */
  footerCacheBytes?: number
}

/**
 * Default bound of a handle's footer cache: 16 MiB of memory. A footer with its page index
 * takes about 1 KiB per row group (8 columns), so this holds some thousands of row groups.
 */
export const DEFAULT_FOOTER_CACHE_BYTES = 16 * 1024 * 1024

export class Table {
  readonly view: SchemaView
  readonly snapshots: SnapshotManager
  readonly manifests: ManifestIO
  /** the direct committer; writes and compactions take another Committer as an option */
  readonly committer: FileStoreCommit
  /** which commits the table's snapshots landed (idempotency checks) */
  readonly landed: LandedCommits
  readonly mergeConfig: MergeEngineConfig
  /** footers and page indexes of the data files this handle opened (data files never change) */
  readonly footers: FooterCache

  private constructor(
    readonly store: ObjectStore,
    readonly schema: TableSchema,
    opts: TableOpenOptions = {},
  ) {
    this.view = describeSchema(schema)
    this.mergeConfig = parseMergeEngineConfig(schema.fields, schema.primaryKeys, schema.options)
    this.snapshots = new SnapshotManager(store)
    this.footers = new ByteLru<DataFileFooter, string>(opts.footerCacheBytes ?? DEFAULT_FOOTER_CACHE_BYTES)
    const o = this.view.options
    this.manifests = new ManifestIO(store, o.manifestCompression, {
      cacheBytes: opts.metadataCacheBytes,
      bucketGroupSize: o.manifestBucketGroupSize,
      maxConcurrentRequests: o.ioMaxConcurrentRequests,
    })
    this.landed = new LandedCommits(store, this.snapshots)
    this.committer = new FileStoreCommit(store, this.snapshots, this.manifests, this.landed, this.view)
  }

  get uri(): string {
    return this.store.uri
  }

  /** The fields of each older schema a data file names, by schema id (read once per handle). */
  private readonly olderFields = new Map<number, Promise<string | null>>()

  /**
   * Refuses a data file written under another schema whose fields differ from this one's
   * (Paimon's schema evolution: an added, dropped, renamed or retyped column). A file of an
   * older schema with the same fields (only options changed) reads as any other.
   */
  async checkFileSchema(fileName: string, schemaId: bigint | number): Promise<void> {
    const id = Number(schemaId)
    if (id === this.schema.id) return
    let fields = this.olderFields.get(id)
    if (!fields) {
      fields = this.store.get(schemaKey(id)).then((b) => (b ? fieldsFingerprint(parseSchema(decoder.decode(b), `${this.uri}/${schemaKey(id)}`).fields) : null))
      this.olderFields.set(id, fields)
    }
    const older = await fields
    if (older === fieldsFingerprint(this.schema.fields)) return
    throw new StrataInputError(
      `data file ${fileName} was written under schema ${id}${older === null ? ` (missing from ${this.uri})` : ''}, whose fields differ from the table's schema ${this.schema.id}: reading files written before a column change needs schema evolution, which Strata does not support yet`,
    )
  }

  /** Creates a table from the user's schema JSON; refuses if one already exists there. */
  static async create(store: ObjectStore | string, schemaInput: unknown, opts?: TableOpenOptions): Promise<Table> {
    const s = typeof store === 'string' ? openStore(store) : store
    const schema = createSchema(schemaInput)
    parseMergeEngineConfig(schema.fields, schema.primaryKeys, schema.options)
    const created = await s.putIfAbsent(schemaKey(0), new TextEncoder().encode(serializeSchema(schema)))
    if (!created) throw new StrataInputError(`table ${s.uri} already exists (it has ${schemaKey(0)})`)
    return new Table(s, schema, opts)
  }

  /** Opens the table with its latest schema. */
  static async open(store: ObjectStore | string, opts?: TableOpenOptions): Promise<Table> {
    const s = typeof store === 'string' ? openStore(store) : store
    const infos = await s.list(SCHEMA_DIR)
    const ids = infos
      .map((i) => /^schema\/schema-(\d+)$/.exec(i.key))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b)
    if (ids.length === 0) throw new StrataInputError(`no table at ${s.uri} (no ${SCHEMA_DIR}schema-N); create it with 'strata create'`)
    const id = ids[ids.length - 1]
    const bytes = await s.get(schemaKey(id))
    return new Table(s, parseSchema(decoder.decode(bytes!), `${s.uri}/${schemaKey(id)}`), opts)
  }
}

/** A schema's fields as the data files lay them out: id, name and type of each, in order. */
function fieldsFingerprint(fields: readonly DataField[]): string {
  return JSON.stringify(fields.map((f) => [f.id, f.name, formatDataType(f.type)]))
}

// A table handle: its store, its latest schema, and the managers every operation shares.

import { FileStoreCommit } from '../commit/commit.ts'
import { LANDED_CACHE_BYTES, LandedCommits } from '../commit/landed.ts'
import { ManifestIO } from '../manifest/manifests.ts'
import { SNAPSHOT_CACHE_BYTES, SnapshotManager } from '../manifest/snapshot-manager.ts'
import { ByteLru, DEFAULT_METADATA_CACHE_BYTES } from '../format/byte-cache.ts'
import type { DataFileFooter, FooterCache } from '../format/data-file-reader.ts'
import type { MergeEngineConfig } from '../merge/merge-types.ts'
import { parseMergeEngineConfig } from '../merge/merge-config.ts'
import { openStore } from '../store/open-store.ts'
import type { TableRoot } from './bucket-state.ts'
import type { ObjectStore } from '../store/object-store.ts'
import { AlreadyExistsError, inputErrorLike, NotFoundError, RefusedError, StaleSchemaError, StrataInputError } from '../errors.ts'
import type { TableSchema } from '../types.ts'
import { type FieldMapping, fieldMapping } from '../table/evolution.ts'
import { SCHEMA_DIR, schemaKey } from '../table/paths.ts'
import { type SchemaView, createSchema, describeSchema, parseSchema, serializeSchema } from '../table/schema.ts'
import { assertRuntimeServes } from '../table/options.ts'
import type { IcebergCatalogPort } from '../iceberg/catalog-port.ts'
import { IcebergMetadataWriter } from '../iceberg/metadata-writer.ts'
import { icebergOptions, icebergRefusal } from '../iceberg/options.ts'

const decoder = new TextDecoder()

/** What a process decides about a handle, as opposed to the table's own options. */
export interface TableOpenOptions {
  /**
   * bound of the handle's metadata cache in bytes of memory (lib/format/byte-cache.ts;
   * default DEFAULT_METADATA_CACHE_BYTES). The snapshot and landed-commit caches take their
   * share of the same budget: 1/32 and 1/8 of it, at most SNAPSHOT_CACHE_BYTES and
   * LANDED_CACHE_BYTES, so a small budget bounds every metadata cache of the handle.
   */
  metadataCacheBytes?: number
  /** bound of the handle's data-file footer cache, in bytes of memory (default DEFAULT_FOOTER_CACHE_BYTES) */
  footerCacheBytes?: number
  /**
   * told of each Iceberg metadata file the handle's committer writes, when the table sets
   * `metadata.iceberg.storage` (a catalog pointer such as AWS Glue's; docs/design.md "Iceberg metadata")
   */
  icebergCatalog?: IcebergCatalogPort
  /** the store of an Iceberg metadata directory outside the table (hadoop-catalog); default: opened from its URI */
  icebergMetadataStore?: ObjectStore
}

/**
 * Default bound of a handle's footer cache: 16 MiB of memory. A footer with its page index
 * takes about 1 KiB per row group (8 columns), so this holds some thousands of row groups.
 */
export const DEFAULT_FOOTER_CACHE_BYTES = 16 * 1024 * 1024

/** What reads and writes a table's own small files (tags, consumers) use: its store, and its URI for messages. */
export interface TableStore extends TableRoot {
  readonly store: ObjectStore
}

export class Table implements TableStore {
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
  /**
   * writes the Iceberg metadata of each snapshot the direct committer lands, when the table
   * sets `metadata.iceberg.storage` (its stats count what failed); null when it does not
   */
  readonly iceberg: IcebergMetadataWriter | null

  private constructor(
    readonly store: ObjectStore,
    readonly schema: TableSchema,
    opts: TableOpenOptions = {},
  ) {
    this.view = describeSchema(schema)
    this.mergeConfig = parseMergeEngineConfig(schema.fields, schema.primaryKeys, schema.options)
    const metadataBytes = opts.metadataCacheBytes ?? DEFAULT_METADATA_CACHE_BYTES
    this.snapshots = new SnapshotManager(store, Math.min(SNAPSHOT_CACHE_BYTES, Math.floor(metadataBytes / 32)))
    this.footers = new ByteLru<DataFileFooter, string>(opts.footerCacheBytes ?? DEFAULT_FOOTER_CACHE_BYTES)
    const o = this.view.options
    this.manifests = new ManifestIO(store, o.manifestCompression, {
      cacheBytes: opts.metadataCacheBytes,
      bucketGroupSize: o.manifestBucketGroupSize,
      maxConcurrentRequests: o.ioMaxConcurrentRequests,
    })
    this.landed = new LandedCommits(store, this.snapshots, Math.min(LANDED_CACHE_BYTES, Math.floor(metadataBytes / 8)))
    this.iceberg = icebergWriterFor(this, opts)
    const iceberg = this.iceberg
    this.committer = new FileStoreCommit(store, this.snapshots, this.manifests, this.landed, this.view, iceberg ? {
      // a commit with manifests written ahead does not hold its adds: the writer reads the delta's manifests
      landed: (snapshot, req) =>
        iceberg.landed(snapshot, req.writtenAhead ? undefined : { adds: req.adds, deletes: req.deletes, indexChanged: (req.indexReplacements?.length ?? 0) > 0, indexBuckets: req.indexReplacements?.map((r) => ({ partition: r.partition, bucket: r.bucket })) }),
      settle: () => iceberg.settle(),
    } : undefined)
  }

  get uri(): string {
    return this.store.uri
  }

  /** The mapping of each other schema's files to this handle's, by schema id (each schema read once per handle). */
  private readonly mappings = new Map<number, Promise<FieldMapping | null>>()

  /**
   * How a data file written under schema `schemaId` maps to this handle's schema, by field id
   * (lib/table/evolution.ts); null when its fields are this schema's. A file of a newer schema
   * than the handle's (the table was altered after this handle opened it) is refused: reading
   * it through the older schema would drop what the newer one added.
   */
  fieldMapping(schemaId: bigint | number, fileName: string): Promise<FieldMapping | null> {
    const id = Number(schemaId)
    if (id === this.schema.id) return Promise.resolve(null)
    let m = this.mappings.get(id)
    if (!m) {
      m = this.schemaById(id).then((s) => fieldMapping(this.schema, s))
      // a failed read of the schema file (the store) is not kept: the next open asks again
      m.catch(() => this.mappings.delete(id))
      this.mappings.set(id, m)
    }
    return m.catch((e: Error) => {
      if (e instanceof StaleSchemaError) throw new StaleSchemaError(`data file ${fileName}: ${e.message}`)
      throw e instanceof StrataInputError ? inputErrorLike(e, `data file ${fileName}: ${e.message}`) : e
    })
  }

  /** A schema of this table by id: this handle's, or read from `schema/schema-N`. */
  async schemaById(id: number): Promise<TableSchema> {
    if (id === this.schema.id) return this.schema
    if (id > this.schema.id) {
      throw new StaleSchemaError(`written under schema ${id}, newer than this handle's schema ${this.schema.id}: the table was altered after it was opened; open it again`)
    }
    const bytes = await this.store.get(schemaKey(id))
    if (!bytes) throw new NotFoundError(`written under schema ${id}, which is missing from ${this.uri} (no ${schemaKey(id)})`)
    return parseSchema(decoder.decode(bytes), `${this.uri}/${schemaKey(id)}`)
  }

  /** Whether the table has a schema newer than this handle's (one HEAD: `schema/schema-(N+1)`, which every alter creates). */
  async newerSchemaExists(): Promise<boolean> {
    return (await this.store.head(schemaKey(this.schema.id + 1))) !== null
  }

  /** The id of the table's latest schema in the store (one LIST), to notice an alter made after this handle opened. */
  async latestSchemaId(): Promise<number> {
    return latestSchemaIdIn(this.store)
  }

  /**
   * Creates a table from the user's schema JSON; refuses if one already exists there, and
   * refuses options this Node cannot write (zstd before Node 22.15; `zstdAvailable` answers
   * for it in tests).
   */
  static async create(store: ObjectStore | string, schemaInput: unknown, opts?: TableOpenOptions & { zstdAvailable?: boolean }): Promise<Table> {
    const s = typeof store === 'string' ? openStore(store) : store
    const schema = createSchema(schemaInput)
    parseMergeEngineConfig(schema.fields, schema.primaryKeys, schema.options)
    assertRuntimeServes(schema.options, `create ${s.uri}`, opts?.zstdAvailable)
    const iceberg = icebergRefusal(schema, s.uri)
    if (iceberg) throw new RefusedError(`create ${s.uri}: ${iceberg}`)
    const created = await s.putIfAbsent(schemaKey(0), new TextEncoder().encode(serializeSchema(schema)))
    if (!created) throw new AlreadyExistsError(`table ${s.uri} already exists (it has ${schemaKey(0)})`)
    return new Table(s, schema, opts)
  }

  /** Opens the table with its latest schema. */
  static async open(store: ObjectStore | string, opts?: TableOpenOptions): Promise<Table> {
    const s = typeof store === 'string' ? openStore(store) : store
    const id = await latestSchemaIdIn(s)
    if (id < 0) throw new NotFoundError(`no table at ${s.uri} (no ${SCHEMA_DIR}schema-N); create it with 'strata create'`)
    const bytes = await s.get(schemaKey(id))
    return new Table(s, parseSchema(decoder.decode(bytes!), `${s.uri}/${schemaKey(id)}`), opts)
  }
}

/**
 * The Iceberg metadata writer of a handle whose table sets `metadata.iceberg.storage`; null
 * when it does not, or when the table is somewhere Strata would not have created it with the
 * option (another tool's table outside a `.db` directory): then no metadata is written.
 */
function icebergWriterFor(table: Table, opts: TableOpenOptions): IcebergMetadataWriter | null {
  const storage = icebergOptions(table.schema.options).storage
  if ((storage !== 'table-location' && storage !== 'hadoop-catalog') || icebergRefusal(table.schema, table.uri, table.view.options)) return null
  return new IcebergMetadataWriter(table, { catalog: opts.icebergCatalog, metadataStore: opts.icebergMetadataStore })
}

/** The largest N of the store's `schema/schema-N`, or -1 when there is none. */
export async function latestSchemaIdIn(store: ObjectStore): Promise<number> {
  let latest = -1
  for (const info of await store.list(SCHEMA_DIR)) {
    const m = /^schema\/schema-(\d+)$/.exec(info.key)
    if (m) latest = Math.max(latest, Number(m[1]))
  }
  return latest
}

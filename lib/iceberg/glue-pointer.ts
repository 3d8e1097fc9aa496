// The catalog pointer on the AWS Glue Data Catalog: keeps a Glue table's `metadata_location`
// on the newest Iceberg metadata the committer published (docs/operations.md "Registering
// tables in AWS Glue").
//
// - One update is a GetTable (the parameters and the table's VersionId), then an UpdateTable
//   with that VersionId: Glue's optimistic check, which answers ConcurrentModificationException
//   when the table changed in between. Then the table is read again and the update retried, at
//   most `attempts` times.
// - Never backwards: the snapshot id of Glue's metadata_location (`v<N>.metadata.json`) is
//   compared with the one to send, and an update is skipped when Glue's is the same or newer
//   (another committer got there first). A location of another name counts as older.
// - A table that is not in Glue yet is created (CreateTable) pointing at the metadata: so it
//   appears with the table's first snapshot, and CloudFormation, which never holds it, cannot
//   set its metadata_location back on a stack update. One created meanwhile by another
//   committer (AlreadyExistsException) is read again and updated as above.
// - At most one update per `intervalMs` (the injected clock): a publish inside the interval
//   only keeps the newest location pending; the next publish after the interval sends it,
//   and `flush` always does, so the pointer ends on the newest metadata when the committer stops.
// - A failed update never fails the commit: it is counted and reported to `onFailure`, the
//   location stays pending, and the next publish after the interval or the next flush retries it.

import { CreateTableCommand, type GlueClient, GetTableCommand, type Table, UpdateTableCommand } from '@aws-sdk/client-glue'
import { ConflictError } from '../errors.ts'
import type { IcebergCatalogPort } from './catalog-port.ts'
import { METADATA_LOCATION_PARAM, icebergTableInput, metadataSnapshotId, newIcebergTableInput } from './glue-table-input.ts'

/**
 * A committer that folds rounds for up to 20 s (STRATA_COMMIT_ROUNDS_MS) moves the pointer
 * two or three times meanwhile, and readers lag the newest snapshot by at most this while it
 * folds; each update is two Glue requests and, unless skip-archive is on, one table version.
 */
export const DEFAULT_GLUE_UPDATE_INTERVAL_MS = 10_000
/** Rounds of GetTable and UpdateTable one update makes while Glue reports concurrent modifications. */
const DEFAULT_GLUE_UPDATE_ATTEMPTS = 5

export interface GluePointerOptions {
  glue: GlueClient
  database: string
  table: string
  /** the Data Catalog's id (an account id); Glue's default is the caller's account */
  catalogId?: string
  intervalMs?: number
  /** Paimon's `metadata.iceberg.glue.skip-archive`: UpdateTable keeps no archived version */
  skipArchive?: boolean
  attempts?: number
  /** milliseconds; the interval is measured with it */
  now?: () => number
  /** told of each failed update (the location stays pending) */
  onFailure?: (error: unknown, pending: PublishedMetadata) => void
}

export interface PublishedMetadata {
  location: string
  snapshotId: number
}

/** What became of one update. */
type GlueUpdateOutcome = 'updated' | 'skipped' | 'failed'

/** Counts since the last `takeCounts` (the committer publishes them as metrics per invocation). */
export interface GluePointerCounts {
  updates: number
  skipped: number
  failures: number
}

/** Glue reported a concurrent modification on every attempt; the next publish or flush tries again. */
export class GlueConcurrentModificationError extends ConflictError {
  override name = 'GlueConcurrentModificationError'
}

export class GluePointer implements IcebergCatalogPort {
  private readonly o: Required<Omit<GluePointerOptions, 'catalogId' | 'onFailure'>> & Pick<GluePointerOptions, 'catalogId' | 'onFailure'>
  /** the newest metadata published and not yet known to be in Glue */
  private pending: PublishedMetadata | null = null
  /** the newest snapshot id Glue is known to point at (an update of ours, or one read) */
  private known = -1
  private lastAttemptAt = -Infinity
  private inFlight: Promise<void> | null = null
  private counts: GluePointerCounts = { updates: 0, skipped: 0, failures: 0 }

  constructor(options: GluePointerOptions) {
    this.o = {
      ...options,
      intervalMs: options.intervalMs ?? DEFAULT_GLUE_UPDATE_INTERVAL_MS,
      skipArchive: options.skipArchive ?? false,
      attempts: options.attempts ?? DEFAULT_GLUE_UPDATE_ATTEMPTS,
      now: options.now ?? Date.now,
    }
  }

  async published(metadataLocation: string, snapshotId: number): Promise<void> {
    if (snapshotId <= this.known || (this.pending && snapshotId <= this.pending.snapshotId)) return
    this.pending = { location: metadataLocation, snapshotId }
    // an update in flight leaves this one pending, for the next publish or flush
    if (this.inFlight || this.o.now() - this.lastAttemptAt < this.o.intervalMs) return
    await this.send()
  }

  async flush(): Promise<void> {
    while (this.inFlight) await this.inFlight
    if (this.pending) await this.send()
  }

  /** Follows `metadata.iceberg.glue.skip-archive` as the table's options now have it. */
  setSkipArchive(on: boolean): void {
    this.o.skipArchive = on
  }

  /** The counts since the last call, reset. */
  takeCounts(): GluePointerCounts {
    const c = this.counts
    this.counts = { updates: 0, skipped: 0, failures: 0 }
    return c
  }

  private async send(): Promise<void> {
    const p = this.pending
    if (!p) return
    // Glue was seen on this snapshot or a newer one since it was published
    if (p.snapshotId <= this.known) {
      this.pending = null
      return
    }
    this.lastAttemptAt = this.o.now()
    const run = this.move(p).then((outcome) => {
      if (outcome !== 'failed' && this.pending === p) this.pending = null
    })
    this.inFlight = run
    try {
      await run
    } finally {
      this.inFlight = null
    }
  }

  /** One update of Glue to `p`, never rejecting: a failure is counted and reported. */
  private async move(p: PublishedMetadata): Promise<GlueUpdateOutcome> {
    try {
      const outcome = await this.update(p)
      if (outcome === 'updated') this.counts.updates++
      else this.counts.skipped++
      return outcome
    } catch (error) {
      this.counts.failures++
      this.o.onFailure?.(error, p)
      return 'failed'
    }
  }

  private async update(p: PublishedMetadata): Promise<Exclude<GlueUpdateOutcome, 'failed'>> {
    const { glue, catalogId, database, table } = this.o
    for (let attempt = 1; attempt <= this.o.attempts; attempt++) {
      const current = await this.read()
      if (current === null) {
        if (await this.create(p)) return 'updated'
        continue
      }
      const location = current.Parameters?.[METADATA_LOCATION_PARAM]
      const currentId = location === undefined ? null : metadataSnapshotId(location)
      if (currentId !== null && currentId >= p.snapshotId) {
        this.known = Math.max(this.known, currentId)
        return 'skipped'
      }
      try {
        await glue.send(
          new UpdateTableCommand({ CatalogId: catalogId, DatabaseName: database, TableInput: icebergTableInput(current, p.location), VersionId: current.VersionId, SkipArchive: this.o.skipArchive }),
        )
        this.known = Math.max(this.known, p.snapshotId)
        return 'updated'
      } catch (e) {
        if ((e as { name?: string }).name !== 'ConcurrentModificationException') throw e
      }
    }
    throw new GlueConcurrentModificationError(`Glue table ${database}.${table}: still modified concurrently after ${this.o.attempts} attempts to point it at ${p.location}`)
  }

  /**
   * The Glue table, or null when Glue does not find it. Glue says EntityNotFoundException for a
   * missing database too; CreateTable then fails with it, and that is the update's failure.
   */
  private async read(): Promise<Table | null> {
    const { glue, catalogId, database, table } = this.o
    try {
      const { Table: t } = await glue.send(new GetTableCommand({ CatalogId: catalogId, DatabaseName: database, Name: table }))
      if (!t) throw new Error(`Glue table ${database}.${table}: GetTable returned no table`)
      return t
    } catch (e) {
      if ((e as { name?: string }).name === 'EntityNotFoundException') return null
      throw e
    }
  }

  /** Creates the table pointing at `p`; false when another committer created it meanwhile. */
  private async create(p: PublishedMetadata): Promise<boolean> {
    const { glue, catalogId, database, table } = this.o
    try {
      await glue.send(new CreateTableCommand({ CatalogId: catalogId, DatabaseName: database, TableInput: newIcebergTableInput(table, p.location) }))
      this.known = Math.max(this.known, p.snapshotId)
      return true
    } catch (e) {
      if ((e as { name?: string }).name === 'AlreadyExistsException') return false
      throw e
    }
  }
}

// The columnar merge for engines that fold (`keeps: 'fold'`: partial-update, aggregation,
// first-row): one key's records at a time, gathered as they are where the merge function
// would return a lone record unchanged, else folded by the row path's own merge function.

import { type Column, isNullAt, physicalToValue, valueAt } from '../../format/columnar-types.ts'
import { type PhysicalEncoder, physicalEncoder } from '../../format/parquet-types.ts'
import type { MergeEngineConfig, MergeFunction } from '../../merge/merge-types.ts'
import { mergeEngineOf } from '../../merge/engines.ts'
import { RowKind, type DataType, type KeyValue, type Value } from '../../types.ts'
import { type Block, type BlockKeyComparator, isRetract } from './block.ts'
import { type ColumnarLevelLookup, filePositionOf, findOlder } from './lookup.ts'
import { MadeRows, type PendingOutput } from './pending-output.ts'

/** What folding knows of an engine: `ColumnarEngine` with `keeps: 'fold'` (lib/merge/descriptor.ts). */
export interface FoldingEngine {
  keepsAlone: (kind: RowKind) => boolean
  lastNonNull?: true
  refusesNullInNotNull: boolean
}

export interface FoldSettings {
  keyTypes: DataType[]
  cfg: MergeEngineConfig
  engine: FoldingEngine
  mergeFunction: MergeFunction
  recordOrder: (a: KeyValue, b: KeyValue) => number
  seqCmp: BlockKeyComparator
  pending: PendingOutput
  batchRows: number
  lookups: ColumnarLevelLookup[]
  dropDelete: boolean
  onSuperseded?: (file: string, position: number) => void
}

const valueOf = (conv: ((p: unknown) => Value) | null, p: unknown): Value => (p === null || p === undefined ? null : conv ? conv(p) : (p as Value))

export class FoldGroups {
  // one key's records, oldest run first and in file order within a run
  private readonly groupB: Block[] = []
  private readonly groupI: number[] = []
  private readonly order: number[] = []
  private readonly nk: number
  private readonly nf: number
  private readonly keyToValue: (((p: unknown) => Value) | null)[]
  private readonly fieldToValue: (((p: unknown) => Value) | null)[]
  private readonly fieldEncoders: PhysicalEncoder[]
  private readonly notNullColumns: number[]
  private readonly keepsOneRecord: boolean

  constructor(private readonly s: FoldSettings) {
    const fields = s.cfg.fields
    this.nk = s.keyTypes.length
    this.nf = fields.length
    this.keyToValue = s.keyTypes.map(physicalToValue)
    this.fieldToValue = fields.map((f) => physicalToValue(f.type))
    this.fieldEncoders = fields.map((f) => physicalEncoder(f.name, f.type))
    this.notNullColumns = fields.flatMap((f, j) => (f.type.nullable ? [] : [this.nk + 2 + j]))
    this.keepsOneRecord = mergeEngineOf(s.cfg.engine).keepsOneRecord
  }

  /** Starts the group of the next key: its records are added oldest run first, in file order within a run. */
  startGroup(): void {
    this.groupB.length = 0
    this.groupI.length = 0
  }

  add(b: Block, i: number): void {
    this.groupB.push(b)
    this.groupI.push(i)
  }

  /**
   * One key's records as the row path merges them (merge-reader.ts, then the row merge's
   * lookup into older levels and its dropping of retractions at the top level): gathered as
   * they are when the merge function would return the lone record unchanged, else folded.
   */
  async foldGroup(): Promise<void> {
    const { groupB, groupI, s } = this
    const n = groupB.length
    let kv: KeyValue | null = null
    let alone = n === 1 && this.keptAlone(groupB[0], groupI[0])
    if (!alone && s.engine.lastNonNull && s.lookups.length === 0 && this.upsertsOnly()) {
      await this.pushLastNonNull()
      return
    }
    let records: KeyValue[] | null = null
    if (!alone) {
      records = new Array(n)
      for (let g = 0; g < n; g++) records[g] = this.recordOf(groupB[g], groupI[g])
      kv = this.merge([...records])
      // with lookups, records that merge to nothing still meet an older row
      if (kv === null && s.lookups.length === 0) return
    }
    if (s.lookups.length > 0) {
      const old = await findOlder(s.lookups, groupB[0], groupI[0])
      if (old === null && kv === null && !alone) return
      if (old !== null) {
        const older = this.recordOf(old.block, old.row)
        // the older row and the key's records in one merge, as the row path (lib/lsm/compact/deletion-vectors.ts RisingKeys)
        const merged = this.merge([older, ...(records ?? [this.recordOf(groupB[0], groupI[0])])])
        // the merge kept the older record whole (first-row, or deduplicate with a sequence
        // field): it stays, nothing is written. An engine that folds values always writes its
        // merge, even when the rising record's sequence number is the lower one
        if (merged !== null && this.keepsOneRecord && merged.seq === older.seq && merged.kind === older.kind) return
        s.onSuperseded?.(old.file, filePositionOf(old))
        if (merged === null) return
        kv = merged
        alone = false
      }
    }
    if (s.dropDelete && isRetract(alone ? groupB[0].kinds[groupI[0]] : kv!.kind)) return
    if (alone) {
      if (s.pending.push(groupB[0], groupI[0])) await s.pending.flush()
    } else await this.pushMade(kv!)
  }

  /** A block's row as the row path reads it. */
  private recordOf(b: Block, i: number): KeyValue {
    const { nk, nf } = this
    const key: Value[] = new Array(nk)
    for (let c = 0; c < nk; c++) key[c] = valueOf(this.keyToValue[c], b.keyCols[c][i])
    const value: Value[] = new Array(nf)
    for (let f = 0; f < nf; f++) value[f] = valueOf(this.fieldToValue[f], valueAt(b.cols[nk + 2 + f], i))
    return { key, seq: b.seq64[i], kind: b.kinds[i] as RowKind, value }
  }

  private keptAlone(b: Block, i: number): boolean {
    if (!this.s.engine.keepsAlone(b.kinds[i] as RowKind)) return false
    if (this.s.engine.refusesNullInNotNull) for (const c of this.notNullColumns) if (isNullAt(b.cols[c], i)) return false
    return true
  }

  private merge(records: KeyValue[]): KeyValue | null {
    const mf = this.s.mergeFunction
    if (records.length > 1) records.sort(this.s.recordOrder)
    mf.reset()
    for (const r of records) mf.add(r)
    return mf.result()
  }

  /** Appends a row the merge function made (in the writer's physical form) to the pending output; `fill` writes its values at row `r`. */
  private async pushMadeRow(fill: (cols: Column[], r: number) => void): Promise<void> {
    const pending = this.s.pending
    const made = (pending.made ??= new MadeRows(this.nk + 2 + this.nf, this.nk, this.s.batchRows))
    const r = made.n++
    fill(made.cols, r)
    if (pending.push(made, r)) await pending.flush()
  }

  /** A row the merge function made for the group's key: the key's columns copied from the group's first record. */
  private pushMade(kv: KeyValue): Promise<void> {
    const { groupB, groupI, nk, nf, fieldEncoders } = this
    return this.pushMadeRow((cols, r) => {
      for (let c = 0; c < nk; c++) (cols[c] as unknown[])[r] = groupB[0].keyCols[c][groupI[0]]
      ;(cols[nk] as BigInt64Array)[r] = kv.seq
      ;(cols[nk + 1] as Int32Array)[r] = kv.kind
      for (let f = 0; f < nf; f++) (cols[nk + 2 + f] as unknown[])[r] = fieldEncoders[f](kv.value[f])
    })
  }

  /** The group's records are all +I or +U with no null where a field is NOT NULL (lastNonNull's case). */
  private upsertsOnly(): boolean {
    const { groupB, groupI } = this
    for (let g = 0; g < groupB.length; g++) {
      const kind = groupB[g].kinds[groupI[g]]
      if (kind !== RowKind.INSERT && kind !== RowKind.UPDATE_AFTER) return false
      for (const c of this.notNullColumns) if (isNullAt(groupB[g].cols[c], groupI[g])) return false
    }
    return true
  }

  /** lastNonNull over the group: each field's last non-null value in merge order, +I, the last record's sequence number. */
  private pushLastNonNull(): Promise<void> {
    const { groupB, groupI, order, nk, nf } = this
    const seqCmp = this.s.seqCmp
    const n = groupB.length
    order.length = n
    for (let g = 0; g < n; g++) order[g] = g
    order.sort((a, b) => seqCmp(groupB[a], groupI[a], groupB[b], groupI[b]))
    const last = order[n - 1]
    return this.pushMadeRow((cols, r) => {
      for (let c = 0; c < nk; c++) (cols[c] as unknown[])[r] = groupB[0].keyCols[c][groupI[0]]
      ;(cols[nk] as BigInt64Array)[r] = groupB[last].seq64[groupI[last]]
      ;(cols[nk + 1] as Int32Array)[r] = RowKind.INSERT
      for (let f = 0; f < nf; f++) {
        const c = nk + 2 + f
        let v: unknown = null
        for (let o = n - 1; o >= 0; o--) {
          const x = valueAt(groupB[order[o]].cols[c], groupI[order[o]])
          if (x !== null && x !== undefined) {
            v = x
            break
          }
        }
        ;(cols[c] as unknown[])[r] = v
      }
    })
  }
}

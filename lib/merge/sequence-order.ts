// The order of one key's records, oldest first, in which every merge function takes them:
// `sequence.field` values if configured, then `_SEQUENCE_NUMBER` (Paimon's SortMergeReader with
// UserDefinedSeqComparator).

import type { DataType, KeyValue, Value } from '../types.ts'
import { compareBytes, compareStringsUtf8 } from '../format/compare.ts'
import type { MergeEngineConfig } from './merge-types.ts'

/**
 * Order of one sequence.field value, as Paimon's generated RecordComparator: nulls before any
 * value whatever the sort order, numbers by `<`/`>` (so NaN ties), strings by UTF-8 bytes.
 */
export function sequenceValueComparator(type: DataType): (a: Value, b: Value) => number {
  switch (type.root) {
    case 'BOOLEAN':
      return (a, b) => (a === b ? 0 : a ? 1 : -1)
    case 'CHAR':
    case 'VARCHAR':
      return (a, b) => compareStringsUtf8(a as string, b as string)
    case 'BINARY':
    case 'VARBINARY':
      return (a, b) => compareBytes(a as Uint8Array, b as Uint8Array)
    default:
      return (a, b) => ((a as number | bigint) > (b as number | bigint) ? 1 : (a as number | bigint) < (b as number | bigint) ? -1 : 0)
  }
}

/**
 * Orders two records of one key, oldest first: by the sequence.field values if configured
 * (nulls first, then ascending or descending per sequence.field.sort-order), then by
 * `_SEQUENCE_NUMBER` (Paimon's SortMergeReader with UserDefinedSeqComparator).
 */
export function sequenceComparator(cfg: MergeEngineConfig): (a: KeyValue, b: KeyValue) => number {
  const bySeq = (a: KeyValue, b: KeyValue) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0)
  if (cfg.sequenceFieldIndexes.length === 0) return bySeq
  const idx = cfg.sequenceFieldIndexes
  const cmps = idx.map((i) => sequenceValueComparator(cfg.fields[i].type))
  const sign = cfg.sequenceAscending ? 1 : -1
  return (a, b) => {
    for (let j = 0; j < idx.length; j++) {
      const x = a.value[idx[j]]
      const y = b.value[idx[j]]
      if (x === null || y === null) {
        if (x === y) continue
        return x === null ? -1 : 1
      }
      const c = cmps[j](x, y)
      if (c !== 0) return sign * c
    }
    return bySeq(a, b)
  }
}

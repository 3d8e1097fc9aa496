// DuckDB's version of a full compaction of one deduplicate bucket, the yardstick of
// bench/compaction.ts: kept here, apart from that script, so the cold-process entry
// (bench/lib/cold-duckdb.ts) can be bundled without it.

/**
 * The merge as one statement: newest row per key by _SEQUENCE_NUMBER, keys whose newest row
 * is a retract (-U 1, -D 3) dropped, sorted by key, written as one Parquet file (snappy, or
 * `codec` as --compression spells it: `zstd:1` is zstd at level 1).
 */
export function duckdbSql(files: string[], out: string, codec = 'snappy'): string {
  const [name, level] = codec.split(':')
  const compression = name === 'none' ? 'uncompressed' : name
  const list = files.map((f) => `'${f.replaceAll("'", "''")}'`).join(', ')
  return `COPY (
  SELECT * EXCLUDE (rn) FROM (
    SELECT *, row_number() OVER (PARTITION BY _KEY_id ORDER BY _SEQUENCE_NUMBER DESC) AS rn
    FROM read_parquet([${list}])
  )
  WHERE rn = 1 AND _VALUE_KIND NOT IN (1, 3)
  ORDER BY _KEY_id
) TO '${out.replaceAll("'", "''")}' (FORMAT parquet, COMPRESSION ${compression}${level === undefined ? '' : `, COMPRESSION_LEVEL ${Number(level)}`})`
}

// A user's program against the installed package's library API: it must type-check with
// the package's declarations and run against a table in a directory of its own.
import { createTable, NotFoundError, openTable, type TableRecord } from 'strata-tables'

const dir = process.argv[2]
try {
  await openTable(`${dir}/missing`)
  throw new Error('opened a table that does not exist')
} catch (e) {
  if (!(e instanceof NotFoundError)) throw e
}
const table = await createTable(`${dir}/orders`, {
  fields: [
    { name: 'id', type: 'BIGINT NOT NULL' },
    { name: 'customer', type: 'STRING' },
    { name: 'amount', type: 'DECIMAL(10, 2)' },
  ],
  primaryKeys: ['id'],
  options: { bucket: '2' },
})
const written = await table.write([
  { id: 1n, customer: 'ada', amount: '10.50' },
  { id: 2, customer: 'grace\tand\nnewline', amount: 3 },
])
await table.write([{ id: 1, _kind: '-D' }])
const rows: TableRecord[] = await table.readAll()
const found = await table.lookup({ id: 2 })
const status = await table.status()
console.log(JSON.stringify({ snapshot: written.snapshotId, rows, found, latest: status.snapshot?.id }, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)))

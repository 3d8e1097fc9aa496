// A streaming start joined to the commit feed on the local runtime (real handlers in worker
// threads, the embedded S3 + SQS): a consumer starts `latest-full` once the first wave of
// writes has landed, while the compactor is still lifting level 0 of a deletion-vector table,
// then reads with its consumer id on each feed event (never polling the table). Every
// written row reaches it exactly once: the first wave through the full state (level 0 merged
// in), the second through the changes after it.

import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs'
import { describe, expect, it } from 'vitest'
import type { CommitEvent } from '../lib/commit/commit-feed.ts'
import { Table } from '../lib/handle/table.ts'
import { readStep, recordStep, resolveScan, startOfRead, streamSteps } from '../lib/read/streaming-start.ts'
import { ROW_KIND_SHORT } from '../lib/types.ts'
import { startLocalRuntime } from '../local/runtime/local-runtime.ts'

const SCHEMA = {
  fields: [
    { name: 'id', type: 'INT' },
    { name: 'qty', type: 'BIGINT' },
  ],
  primaryKeys: ['id'],
  options: { bucket: '4', 'deletion-vectors.enabled': 'true' },
}

describe('a streaming start followed by the commit feed', () => {
  it('hands every written row over exactly once, the first wave in the full state', async () => {
    const rt = await startLocalRuntime({ tables: [{ name: 't', schema: SCHEMA }], feed: true, writerBatchingWindowMs: 100 })
    try {
      const table = await Table.open(rt.tables.get('t')!.table.store)
      const scan = resolveScan(table, { scanMode: 'latest-full' })
      const sent = new Set<string>()
      const consumed: string[] = []
      let fullRows = 0
      let started = false
      /**
       * One read with the consumer id: its start the first time, then the changes after its
       * progress. Every key is written once, so a read up to snapshot S has handed over exactly
       * S's record count: a row lost (or repeated) fails here, not at the deadline below.
       */
      const read = async () => {
        const { start } = await startOfRead(table, scan, 'downstream')
        for await (const step of streamSteps(table, scan, { start })) {
          for await (const batch of readStep(table, step)) {
            for (const c of batch) consumed.push(`${ROW_KIND_SHORT[c.kind]} ${c.row[0]}=${c.row[1]}`)
          }
          if (step.fullSnapshot !== null) fullRows = consumed.length
          const next = await recordStep(table, 'downstream', step)
          if (next !== null) expect(consumed.length).toBe((await table.snapshots.snapshot(next - 1))!.totalRecordCount)
        }
      }
      const wave = async (n: number) => {
        const ids = Array.from({ length: 30 }, (_, i) => n * 100 + i)
        for (const id of ids) sent.add(`+I ${id}=${id * 2}`)
        await rt.send(ids.map((id) => JSON.stringify({ id, qty: id * 2 })))
      }
      await wave(0)
      const deadline = Date.now() + 60_000
      while (consumed.length < sent.size || !started) {
        // a guard against a hang, not a measure of speed
        if (Date.now() > deadline) throw new Error(`timed out: consumed ${consumed.length} of ${sent.size} rows`)
        const got = await rt.sqs.send(new ReceiveMessageCommand({ QueueUrl: rt.feedQueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }))
        for (const m of got.Messages ?? []) {
          expect((JSON.parse(m.Body!) as CommitEvent).table).toBe('t')
          await read()
          if (!started) {
            // the start has been made: the second wave lands after it
            started = true
            await wave(1)
          }
          await rt.sqs.send(new DeleteMessageCommand({ QueueUrl: rt.feedQueueUrl, ReceiptHandle: m.ReceiptHandle! }))
        }
      }
      expect(consumed.sort()).toEqual([...sent].sort())
      expect(fullRows).toBeGreaterThan(0)
    } finally {
      await rt.stop()
    }
  }, 90_000)
})

// The commit feed end to end on the local runtime (real handlers in worker threads, the
// embedded S3 + SQS): records go through the ingest queue, writers and the committer land
// them, the committer publishes feed events, and a downstream consumer that reads with its
// consumer id on each event (never polling the table) sees every written row exactly once,
// with its kind.

import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs'
import { describe, expect, it } from 'vitest'
import type { CommitEvent } from '../lib/commit/commit-feed.ts'
import { consumerStart, planIncremental, readPlan, recordConsumer } from '../lib/read/incremental.ts'
import { Table } from '../lib/handle/table.ts'
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

describe('commit feed on the local runtime', () => {
  it('a consumer driven by feed events reads every written row exactly once', async () => {
    const rt = await startLocalRuntime({ tables: [{ name: 't', schema: SCHEMA }], feed: true, writerBatchingWindowMs: 100 })
    try {
      expect(rt.feedQueueUrl).toBeDefined()
      const table = await Table.open(rt.tables.get('t')!.table.store)
      const sent = new Set<string>()
      const consumed: string[] = []
      const kinds = new Set<string>()
      let events = 0
      // two waves of distinct keys, so no write merges two of them
      for (let wave = 0; wave < 2; wave++) {
        const ids = Array.from({ length: 30 }, (_, i) => wave * 100 + i)
        for (const id of ids) sent.add(`+I ${id}=${id * 2}`)
        await rt.send(ids.map((id) => JSON.stringify({ id, qty: id * 2 })))
      }
      const deadline = Date.now() + 60_000
      while (consumed.length < sent.size) {
        if (Date.now() > deadline) throw new Error(`timed out: consumed ${consumed.length} of ${sent.size} rows after ${events} events`)
        const got = await rt.sqs.send(new ReceiveMessageCommand({ QueueUrl: rt.feedQueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }))
        for (const m of got.Messages ?? []) {
          const event = JSON.parse(m.Body!) as CommitEvent
          expect(event.table).toBe('t')
          events++
          for (const k of event.kinds) kinds.add(k)
          // the snapshots the event names exist when it arrives
          expect(await table.snapshots.latestId()).toBeGreaterThanOrEqual(event.toSnapshot)
          const from = await consumerStart(table, 'downstream', 0)
          const plan = await planIncremental(table, { fromSnapshot: from })
          for await (const batch of readPlan(table, plan)) for (const c of batch) consumed.push(`${ROW_KIND_SHORT[c.kind]} ${c.row[0]}=${c.row[1]}`)
          await recordConsumer(table, 'downstream', plan)
          await rt.sqs.send(new DeleteMessageCommand({ QueueUrl: rt.feedQueueUrl, ReceiptHandle: m.ReceiptHandle! }))
        }
      }
      expect(consumed.sort()).toEqual([...sent].sort())
      expect(events).toBeGreaterThan(0)
      expect(kinds.has('APPEND')).toBe(true)
    } finally {
      await rt.stop()
    }
  }, 90_000)
})

// The cost model of bench/cost-sim.ts on tiny cases whose figures are known by hand: the unit
// costs calibrated from a hand-built measured window, the usage they make from hand-set
// simulated counts and its dollars; every line item the measured window is billed for is in
// the model's bill; the discrete-event model's counts of a seeded two-bucket run.
import { describe, expect, it } from 'vitest'
import type { RequestCount } from '../local/request-counts.ts'
import { BILLED_COMPONENTS, type CostUsage, FUNCTIONS, bill } from '../bench/lib/cost-bill.ts'
import { type Component, type PriceFile, SECONDS_PER_MONTH, loadPrices, tallyRequests } from '../bench/lib/cost-count.ts'
import type { MeasuredWindow } from '../bench/lib/cost-anchor.ts'
import { type ModelSetting, bucketsTouched, calibrate, measuredDrivers, modelUsage } from '../bench/lib/cost-model.ts'
import { type SimCalibration, type SimUsage, simulate } from '../bench/simulate.ts'

const cell = (caller: string, service: 's3' | 'sqs', operation: string, kind: string, requests: number, extra: Partial<RequestCount> = {}): RequestCount => ({
  service,
  operation,
  caller,
  resource: service === 's3' ? 'strata-local' : extra.resource ?? '',
  kind,
  requests,
  requestBytes: 0,
  responseBytes: 0,
  chunks: service === 'sqs' ? requests : 0,
  empty: 0,
  errors: 0,
  ...extra,
})

// 10 s, 4 buckets, 2 writer invocations of 20 rows; every count below is what the unit costs are read from
const WINDOW: MeasuredWindow = {
  buckets: 4,
  taskThreads: 4,
  seconds: 10,
  rowsWritten: 40,
  tableBytes: 4000,
  functions: {
    writer: { invocations: 2, estimatedMs: 2000, records: 40 },
    compactor: { invocations: 1, estimatedMs: 900, records: 3 },
    committer: { invocations: 2, estimatedMs: 400, records: 5 },
    maintenance: { invocations: 0, estimatedMs: 0, records: 0 },
  },
  counts: [
    cell('w', 's3', 'PutObject', 'data', 6, { requestBytes: 800 }), // 6 buckets touched
    cell('w', 's3', 'GetObject', 'manifest', 4), // 2 per invocation
    cell('w', 'sqs', 'SendMessage', '', 2, { resource: 'strata-bench-commit.fifo', chunks: 4 }), // 2 invocations, 4/6 chunk per bucket
    cell('esm-w', 'sqs', 'ReceiveMessage', '', 5, { resource: 'strata-ingest', empty: 1 }), // 4 billed chunks over 40 rows
    cell('c0', 's3', 'PutObject', 'data', 3), // 3 compactions
    cell('c0', 's3', 'GetObject', 'data', 9), // 6 files + 3 base files
    cell('c0', 's3', 'GetObject', 'snapshot', 6), // 2 per compaction
    cell('esm-c0', 'sqs', 'ReceiveMessage', '', 1, { resource: 'strata-bench-compaction.fifo' }),
    cell('m0', 's3', 'PutObject', 'snapshot', 4), // 2 snapshots (each with its LATEST hint)
    cell('esm-m0', 'sqs', 'ReceiveMessage', '', 2, { resource: 'strata-bench-commit.fifo' }),
    cell('upstream', 'sqs', 'SendMessageBatch', '', 4, { resource: 'strata-ingest' }), // the producer: never billed
  ],
}
const MAINTENANCE = [{ seconds: 10, requests: { s3Tier1: 1, s3Tier2: 2, s3Free: 0, sqsFifoChunks: 0, sqsStandardChunks: 0, sqsRequests: 0, sqsEmptyReceives: 0, other: 0 }, usage: { invocations: 0.01, billedMs: 5, estimatedMs: 5, memoryMb: 1024 } }]

const SIM: SimUsage = { writerCommits: 10, bucketsTouched: 30, compactions: 5, jobsCompacted: 20, filesCompacted: 25, compactorBusySeconds: 4, snapshots: 7, committerInvocations: 3, committerBusySeconds: 1, jobsQueuedStart: 0, jobsQueuedEnd: 0 }
const SETTING: ModelSetting = {
  buckets: 4,
  seconds: 100,
  rowsPerInvocation: 20,
  committers: 2,
  memoryMb: { writer: 1024, compactor: 3008, committer: 1024, maintenance: 1024 },
  cloudwatch: { metrics: 10, alarms: 2, dashboards: 1 },
  logBytesPerInvocation: 1500,
  retainedSeconds: 3600,
}

describe('the cost model', () => {
  const u = calibrate([WINDOW], MAINTENANCE)
  const prices: PriceFile = loadPrices()

  it('reads each driver of a measured window', () => {
    expect(measuredDrivers(WINDOW)).toEqual({ writerInvocation: 2, bucketTouched: 6, row: 40, compaction: 3, fileRead: 9, compactorInvocation: 1, snapshot: 2, committerInvocation: 2 })
  })

  it('calibrates the unit costs by hand', () => {
    expect(u.perUnit.writerInvocation.writer!.s3Tier2).toBe(2)
    expect(u.perUnit.bucketTouched.writer!.s3Tier1).toBe(1)
    expect(u.perUnit.bucketTouched.writer!.sqsFifoChunks).toBeCloseTo(4 / 6, 12)
    expect(u.perUnit.row['esm-writer']!.sqsStandardChunks).toBeCloseTo(0.1, 12)
    expect(u.perUnit.compaction.compactor).toMatchObject({ s3Tier1: 1, s3Tier2: 2 })
    expect(u.perUnit.fileRead.compactor!.s3Tier2).toBe(1)
    expect(u.perUnit.snapshot.committer!.s3Tier1).toBe(2)
    expect(u.perUnit.compactorInvocation['esm-compactor']!.sqsFifoChunks).toBe(1)
    expect(u.perUnit.committerInvocation['esm-committer']!.sqsFifoChunks).toBe(1)
    expect(u.compactorInvocationsPerCompaction).toBeCloseTo(1 / 3, 12)
    expect(u.committerMsPerSnapshot).toBe(200)
    // one window without CPU times: the line through it is flat at its mean, 1,000 ms
    expect(u.writerMs).toEqual({ base: 1000, perBucket: 0 })
    expect(u.writerBytesPerRow).toBe(20)
  })

  it('turns simulated counts into the usage bill() prices, and its dollars', () => {
    const usage = modelUsage(SIM, SETTING, u)
    expect(usage.upserts).toBe(200)
    expect(usage.requests.writer).toMatchObject({ s3Tier1: 30, s3Tier2: 20 })
    expect(usage.requests.writer.sqsFifoChunks).toBeCloseTo(20, 9)
    expect(usage.requests['esm-writer'].sqsStandardChunks).toBeCloseTo(20, 9)
    expect(usage.requests.compactor).toMatchObject({ s3Tier1: 5, s3Tier2: 5 * 2 + (25 + 5) * 1 })
    expect(usage.requests.committer.s3Tier1).toBe(14)
    expect(usage.requests['esm-committer'].sqsFifoChunks).toBe(3)
    expect(usage.requests['esm-compactor'].sqsFifoChunks).toBeCloseTo(5 / 3, 9)
    expect(usage.requests.maintenance).toMatchObject({ s3Tier1: 10, s3Tier2: 20 })
    expect(usage.requests.upstream.sqsStandardChunks).toBe(0)
    expect(usage.functions.writer).toMatchObject({ invocations: 10, estimatedMs: 10_000 })
    expect(usage.functions.compactor.estimatedMs).toBe(4000)
    expect(usage.functions.committer.estimatedMs).toBe(1400)
    expect(usage.storedBytes).toBeCloseTo(4000 + ((200 * 20 + 5 * 1000) / 100) * 3600, 6)
    const b = bill(usage, prices, 'estimated')
    const perMonth = SECONDS_PER_MONTH / 100
    const line = (item: string) => b.lines.find((l) => l.item === item)!.usdPerMonth
    expect(line('writer PUT/COPY/POST/LIST')).toBeCloseTo(30 * perMonth * prices.prices['s3.standard.tier1'].usd, 9)
    expect(line('compactor duration')).toBeCloseTo((3008 / 1024) * 4 * perMonth * prices.prices['lambda.arm64.gbSecond'].usd, 9)
    expect(b.usdPerMillionUpserts).toBeCloseTo(b.usdPerMonth / ((200 * perMonth) / 1e6), 9)
  })

  it('bills every line item the measured window is billed for', () => {
    const tallies = tallyRequests(WINDOW.counts).byComponent
    tallies.maintenance = MAINTENANCE[0].requests
    const functions = Object.fromEntries(FUNCTIONS.map((f) => [f, { invocations: WINDOW.functions[f].invocations, billedMs: WINDOW.functions[f].estimatedMs, estimatedMs: WINDOW.functions[f].estimatedMs, memoryMb: SETTING.memoryMb[f] }])) as CostUsage['functions']
    functions.maintenance = MAINTENANCE[0].usage
    const measured: CostUsage = { seconds: 10, upserts: 40, functions, requests: tallies, idlePolling: { pollers: 5, waitSeconds: 20 }, storedBytes: 4000, cloudwatch: SETTING.cloudwatch, logBytes: 1500 * 5 }
    const items = (x: CostUsage) => new Set(bill(x, prices, 'estimated').lines.map((l) => l.item))
    const model = items(modelUsage(SIM, SETTING, u))
    const missing = [...items(measured)].filter((i) => !model.has(i))
    expect(missing).toEqual([])
    // and every request class and function the window used, before bill() adds the idle polls
    const modelled = modelUsage(SIM, SETTING, u)
    const classes = ['s3Tier1', 's3Tier2', 'sqsFifoChunks', 'sqsStandardChunks'] as const
    const used = (x: CostUsage) => [
      ...Object.entries(x.requests).filter(([c]) => BILLED_COMPONENTS.includes(c as Component)).flatMap(([c, t]) => classes.filter((k) => k === 'sqsFifoChunks' || k === 'sqsStandardChunks' ? t[k] - t.sqsEmptyReceives > 0 : t[k] > 0).map((k) => `${c} ${k}`)),
      ...FUNCTIONS.filter((f) => x.functions[f].invocations > 0).map((f) => `${f} invocations`),
    ]
    const usedByModel = new Set(used(modelled))
    expect(used(measured).filter((i) => !usedByModel.has(i))).toEqual([])
  })

  it('counts distinct buckets touched', () => {
    expect(bucketsTouched(64, 1)).toBeCloseTo(1, 12)
    expect(bucketsTouched(1024, 1000)).toBeCloseTo(1024 * (1 - (1023 / 1024) ** 1000), 9)
  })
})

describe('the discrete-event model counts a seeded run', () => {
  // two buckets, both touched by every writer commit, one a second; each compaction and
  // fold takes well under a second, so every second's two jobs are compacted before the next
  const cal: SimCalibration = { writerCommitsPerSecond: 1, touchProbability: 1, perBucketMs: 100, perJobMs: 10, directCurve: [{ committers: 1, commitsPerSecond: 10 }], foldBaseMs: 50, foldPerCommitMs: 1, committers: 1, rounds: true }
  const run = () => simulate(cal, { buckets: 2, lambdaConcurrency: 10, seconds: 10, warmupSeconds: 0, seed: 7 }, 'folded', 1).usage

  it('writers, jobs and compactions as counted by hand', () => {
    const u = run()
    // writer commits at 0, 1, …, 10 s; the last one lands after the window
    expect(u.writerCommits).toBe(11)
    expect(u.bucketsTouched).toBe(22)
    expect(u.compactions).toBe(20)
    expect(u.jobsCompacted).toBe(20)
    expect(u.filesCompacted).toBe(20)
    expect(u.jobsQueuedEnd).toBe(0)
    // each second: one snapshot for the writer, one or two for the compactions
    expect(u.snapshots).toBeGreaterThanOrEqual(20)
    expect(u.snapshots).toBeLessThanOrEqual(30)
    expect(run()).toEqual(u)
  })
})

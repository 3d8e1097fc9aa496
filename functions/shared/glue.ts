// The committer's Glue registration (docs/operations.md "Registering tables in AWS Glue"):
// STRATA_GLUE_* read, and the Glue pointer its table announces Iceberg metadata to. Only
// functions/committer.ts imports this module, so only the committer's bundle carries the AWS
// SDK's Glue client.

import { GlueClient } from '@aws-sdk/client-glue'
import { DEFAULT_GLUE_UPDATE_INTERVAL_MS, GluePointer } from '../../lib/iceberg/glue-pointer.ts'
import { ConfigError } from './config.ts'
import { logger } from './runtime.ts'

export interface GlueTarget {
  database: string
  table: string
  updateIntervalMs: number
}

/**
 * STRATA_GLUE_DATABASE and STRATA_GLUE_TABLE (both or neither) and
 * STRATA_GLUE_UPDATE_INTERVAL_MS; undefined when the table is not registered in Glue.
 */
export function glueTarget(env: Record<string, string | undefined> = process.env): GlueTarget | undefined {
  const database = env.STRATA_GLUE_DATABASE || undefined
  const table = env.STRATA_GLUE_TABLE || undefined
  if (database === undefined && table === undefined) return undefined
  if (database === undefined || table === undefined) {
    throw new ConfigError(`environment variables STRATA_GLUE_DATABASE and STRATA_GLUE_TABLE: expected both or neither, got only ${database === undefined ? 'STRATA_GLUE_TABLE' : 'STRATA_GLUE_DATABASE'}`)
  }
  const interval = env.STRATA_GLUE_UPDATE_INTERVAL_MS
  if (interval !== undefined && interval !== '' && !/^\d+$/.test(interval)) {
    throw new ConfigError(`environment variable STRATA_GLUE_UPDATE_INTERVAL_MS: expected a non-negative integer, got ${JSON.stringify(interval)}`)
  }
  return { database, table, updateIntervalMs: interval ? Number(interval) : DEFAULT_GLUE_UPDATE_INTERVAL_MS }
}

/** The Glue pointer of the environment's registration; null without STRATA_GLUE_DATABASE. */
export function gluePointerFromEnv(): GluePointer | null {
  const target = glueTarget()
  if (!target) return null
  return new GluePointer({
    // the SDK reads AWS_ENDPOINT_URL_GLUE / AWS_ENDPOINT_URL itself
    glue: new GlueClient({}),
    database: target.database,
    table: target.table,
    intervalMs: target.updateIntervalMs,
    onFailure: (error, pending) => logger.warn('Glue table not moved to the newest Iceberg metadata; the commit landed, the next one retries', { glueTable: `${target.database}.${target.table}`, metadataLocation: pending.location, error }),
  })
}

// The stack's own custom resource (Custom::StrataTable): creates each configured table
// (`schema/schema-0`, the same as `strata create`) when the stack is deployed, so the
// functions find a table on their first event. It lives under cdk/ because it is part of
// provisioning, not a runtime function.
//
// Create/Update: no table at the URI → create it; a table there → check that its columns,
// primary keys and partition keys are the configured ones and fail the deployment, naming
// the differences, if not: a deployment does not alter columns (they change through
// `strata alter`, and the config then follows the latest schema). Options that differ are
// applied as an alter of the table (set-option, reset-option: lib/handle/alter.ts), which
// refuses what Paimon refuses to change on a live table (`bucket`, `merge-engine`, …) naming
// the option; the deployment then fails with that message and nothing is written.
// `compaction.task-threads` may differ and is left alone: it is a deployment setting (the
// compactor's concurrency), not something the stored table depends on.
// Delete: nothing. The data outlives the stack (the bucket is retained).
//
// It speaks CloudFormation's custom-resource protocol itself (a PUT of the result to the
// pre-signed ResponseURL), so no provider framework Lambda is deployed alongside.

import { formatDataType } from '../../lib/format/data-type.ts'
import { createSchema } from '../../lib/table/schema.ts'
import { Table } from '../../lib/handle/table.ts'
import { alterTable, optionChanges } from '../../lib/handle/alter.ts'
import { AlreadyExistsError, NotFoundError, StrataInputError } from '../../lib/errors.ts'
import type { TableSchema } from '../../lib/types.ts'

export interface TableInitProperties {
  TableName: string
  TableUri: string
  /** the schema JSON as written in the deployment config */
  Schema: string
}

export interface CustomResourceEvent {
  RequestType: 'Create' | 'Update' | 'Delete'
  ResponseURL: string
  StackId: string
  RequestId: string
  LogicalResourceId: string
  PhysicalResourceId?: string
  ResourceProperties: TableInitProperties & { ServiceToken?: string }
}

/** Options that may differ between the stored table and the deployment, and are not applied to it. */
export const DEPLOYMENT_OPTIONS: ReadonlySet<string> = new Set(['compaction.task-threads'])

function shape(s: TableSchema): Record<string, string> {
  return {
    fields: s.fields.map((f) => `${f.name} ${formatDataType(f.type)}`).join(', '),
    primaryKeys: s.primaryKeys.join(', '),
    partitionKeys: s.partitionKeys.join(', '),
  }
}

/** What differs between the stored columns and keys and the configured ones, one line each (options are applied, not compared). */
export function schemaDifferences(stored: TableSchema, configured: TableSchema): string[] {
  const a = shape(stored)
  const b = shape(configured)
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])]
  return keys.filter((k) => a[k] !== b[k]).map((k) => `${k}: stored ${JSON.stringify(a[k] ?? null)}, configured ${JSON.stringify(b[k] ?? null)}`)
}

/** Creates the table or checks it; returns a line for the log. */
export async function ensureTable(props: TableInitProperties): Promise<string> {
  let input: unknown
  try {
    input = JSON.parse(props.Schema)
  } catch (e) {
    throw new StrataInputError(`table '${props.TableName}': property Schema is not valid JSON (${(e as Error).message})`)
  }
  const configured = createSchema(input)
  let table: Table
  try {
    table = await Table.open(props.TableUri)
  } catch (e) {
    if (!(e instanceof NotFoundError)) throw e
    try {
      await Table.create(props.TableUri, input)
      return `created table '${props.TableName}' at ${props.TableUri}`
    } catch (err) {
      // another deployment created it meanwhile: check it like any existing table
      if (!(err instanceof AlreadyExistsError)) throw err
      table = await Table.open(props.TableUri)
    }
  }
  const diff = schemaDifferences(table.schema, configured)
  if (diff.length) {
    throw new StrataInputError(
      `table '${props.TableName}' at ${props.TableUri} already exists with a different schema (a deployment does not alter columns or keys: change the columns with 'strata alter' and make the config match, deploy it under a new name, or restore the config): ${diff.join('; ')}`,
    )
  }
  const changes = optionChanges(table.schema.options, configured.options, DEPLOYMENT_OPTIONS)
  if (changes.length === 0) return `table '${props.TableName}' at ${props.TableUri} exists with the configured schema`
  try {
    const altered = await alterTable(table, changes)
    return `table '${props.TableName}' at ${props.TableUri}: applied ${changes.map(describeOptionChange).join(', ')} (schema ${altered.schema.id})`
  } catch (e) {
    if (!(e instanceof StrataInputError)) throw e
    throw new StrataInputError(`table '${props.TableName}' at ${props.TableUri}: the deployment changes options the table cannot take (nothing was changed; restore the option in the config, or deploy the table under a new name): ${e.message}`)
  }
}

function describeOptionChange(c: { kind: string; key?: string; value?: string }): string {
  return c.kind === 'set-option' ? `set '${c.key}' = '${c.value}'` : `reset '${c.key}'`
}

async function respond(event: CustomResourceEvent, status: 'SUCCESS' | 'FAILED', reason: string, physicalId: string): Promise<void> {
  const body = JSON.stringify({
    Status: status,
    // CloudFormation caps the response at 4 KB
    Reason: reason.slice(0, 3000),
    PhysicalResourceId: physicalId,
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
  })
  // the pre-signed URL is signed without a content type, so none may be sent
  const res = await fetch(event.ResponseURL, { method: 'PUT', body, headers: { 'content-type': '' } })
  if (!res.ok) throw new Error(`custom resource response to CloudFormation failed: HTTP ${res.status} ${await res.text()}`)
}

export async function handler(event: CustomResourceEvent): Promise<void> {
  const props = event.ResourceProperties
  const physicalId = props?.TableUri ?? event.PhysicalResourceId ?? event.LogicalResourceId
  let status: 'SUCCESS' | 'FAILED' = 'SUCCESS'
  let reason: string
  try {
    if (event.RequestType === 'Delete') reason = `kept table ${event.PhysicalResourceId ?? physicalId}: data outlives the stack`
    else reason = await ensureTable(props)
  } catch (e) {
    status = 'FAILED'
    reason = (e as Error).message
  }
  console.log(JSON.stringify({ level: status === 'SUCCESS' ? 'INFO' : 'ERROR', message: reason, requestType: event.RequestType, table: props?.TableName }))
  // a Delete keeps the id CloudFormation knows; a changed URI on Update makes a new resource
  await respond(event, status, reason, event.RequestType === 'Delete' ? (event.PhysicalResourceId ?? physicalId) : physicalId)
}

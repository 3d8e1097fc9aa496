// The errors a caller can branch on: every error Strata raises on purpose is a StrataError
// whose `kind` names its cause, so a caller (the CLI's exit codes, the reader's HTTP
// statuses) switches on the kind instead of reading messages. What the kinds mean and why
// the classes nest as they do: docs/design.md "Errors". This module imports nothing of lib/.

/** What went wrong, as a caller acts on it. */
export type StrataErrorKind = 'input' | 'not-found' | 'conflict' | 'stale-schema' | 'store' | 'refused' | 'corrupt'

/** An error Strata raises on purpose; `kind` says what the caller may do about it. */
export abstract class StrataError extends Error {
  abstract readonly kind: StrataErrorKind
}

/** Bad input: names the field, the value and what was expected. Fix the input; retrying is useless. */
export class StrataInputError extends StrataError {
  override name = 'StrataInputError'
  readonly kind: StrataErrorKind = 'input'
}

/**
 * A table, snapshot, tag, consumer or schema the caller named does not exist. A
 * StrataInputError too: the name came from the caller, and callers that answer bad input
 * (HTTP 400, the handlers' catch sites) keep answering it the same way.
 */
export class NotFoundError extends StrataInputError {
  override name = 'NotFoundError'
  override readonly kind: StrataErrorKind = 'not-found'
}

/**
 * Something Strata deliberately does not do (a Parquet feature, an option an engine refuses,
 * an unsupported change). A StrataInputError too, for the same reason as NotFoundError: the
 * request asked for it.
 */
export class RefusedError extends StrataInputError {
  override name = 'RefusedError'
  override readonly kind: StrataErrorKind = 'refused'
}

/**
 * What the caller asked to create exists already (a table, a tag). Bad input, not a conflict:
 * retrying the same request cannot succeed; the caller picks another name or deletes first.
 */
export class AlreadyExistsError extends StrataInputError {
  override name = 'AlreadyExistsError'
}

/**
 * An error of the same class as `e` with another message: a caller that adds where the
 * failure happened keeps its kind. Every StrataInputError of lib/ takes the message alone.
 */
export function inputErrorLike(e: StrataInputError, message: string): StrataInputError {
  return new (e.constructor as new (message: string) => StrataInputError)(message)
}

/** Another writer or maintenance won a race; redo the work from fresh state. */
export class ConflictError extends StrataError {
  override name = 'ConflictError'
  readonly kind: StrataErrorKind = 'conflict'
}

/** A commit conflicts with a concurrent commit and must be retried from fresh state. */
export class CommitConflictError extends ConflictError {
  override name = 'CommitConflictError'
  /**
   * true when the request is known never to land (the direct committer refused it before
   * creating any snapshot), so its data files may be deleted at once; otherwise (a queued
   * commit) they are left to orphan cleanup
   */
  constructor(
    message: string,
    readonly landsNever = false,
  ) {
    super(message)
  }
}

/** The commit did not land and may be retried (lost every race, or not confirmed in time). */
export class CommitFailedError extends ConflictError {
  override name = 'CommitFailedError'
}

/**
 * A snapshot whose identities are asked for after it expired: a warm process may still hold
 * the snapshot in its cache, but expiration took its sidecar with it. Nothing landed in it
 * is left to find; a walk treats it as the end of what is retained.
 */
export class SnapshotExpiredError extends ConflictError {
  override name = 'SnapshotExpiredError'
  constructor(readonly snapshotId: number) {
    super(`snapshot ${snapshotId} has expired`)
  }
}

/**
 * A handle met a data file of a newer schema than its own (the table was altered after it was
 * opened). Not bad input: the same call on a handle opened again succeeds, so it is retryable.
 */
export class StaleSchemaError extends StrataError {
  override name = 'StaleSchemaError'
  readonly kind: StrataErrorKind = 'stale-schema'
}

/**
 * A store request failed for good (after the store's own retries), or the store has no
 * object a read asked a range of. The message names the operation and key; `cause` holds the
 * store's own error (the SDK's, with its `$metadata`, name and `$retryable`), which retry
 * policies read through the cause chain (lib/store/retrying-store.ts isTransientStoreError).
 */
export class StoreError extends StrataError {
  override name = 'StoreError'
  readonly kind: StrataErrorKind = 'store'
}

/**
 * A stored file whose bytes do not decode, or decode to something its manifest entry rules
 * out (a key outside its min/max key, keys out of order, another row count). The message
 * starts with the file's key in the store; `cause` holds the decoder's error, if any.
 */
export class CorruptFileError extends StrataError {
  override name = 'CorruptFileError'
  readonly kind: StrataErrorKind = 'corrupt'
  constructor(
    /** the file's key in the table's store */
    readonly file: string,
    problem: string,
    options?: { cause?: unknown },
  ) {
    super(`${file}: ${problem}`, options)
  }
}

/**
 * An object a snapshot names (a manifest, a data or index file, its schema) is missing from
 * the store. Of kind 'corrupt' like CorruptFileError, but not one: it names no file whose
 * bytes are wrong, and code that passes a CorruptFileError on as already naming its file
 * (lib/format/data-file-source.ts) must not take it for one.
 */
export class MissingReferenceError extends StrataError {
  override name = 'MissingReferenceError'
  readonly kind: StrataErrorKind = 'corrupt'
}

/** What `errorKind` answers for an error that is no StrataError and no store's. */
export type ErrorKind = StrataErrorKind | 'internal'

/**
 * The kind of any thrown value. A StrataError says its own; an error a store raised without
 * wrapping (the AWS SDK's, with `$metadata`; a Node system error, with `code` and `syscall`;
 * a fault injected in their shape) is 'store', found along the `cause` chain as the retry
 * policy finds it; anything else is 'internal' (a bug, or a failure nobody classified).
 */
export function errorKind(e: unknown): ErrorKind {
  if (e instanceof StrataError) return e.kind
  for (let x = e, depth = 0; typeof x === 'object' && x !== null && depth < 5; x = (x as { cause?: unknown }).cause, depth++) {
    if (x instanceof StrataError) return x.kind
    if (looksLikeStoreFailure(x)) return 'store'
  }
  return 'internal'
}

function looksLikeStoreFailure(x: object): boolean {
  const o = x as { $metadata?: unknown; $retryable?: unknown; code?: unknown; syscall?: unknown }
  return (typeof o.$metadata === 'object' && o.$metadata !== null) || o.$retryable !== undefined || (typeof o.code === 'string' && typeof o.syscall === 'string')
}

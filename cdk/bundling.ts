// How every Lambda handler is bundled (esbuild, through NodejsFunction), kept in one place so
// the bundle test builds exactly what the stack deploys.
//
// - ESM output (index.mjs): @middy/core 6 ships ES modules only (Powertools ships both);
//   ESM keeps such code as written, where CommonJS output would have esbuild rewrite it and
//   break any `import.meta`. CommonJS code inside dependencies may still call `require`
//   for Node built-ins, which an ES module does not define, so the banner creates one (the
//   pattern the Powertools docs give for ESM bundles).
// - target node20: the code runs on Node 20 here and on nodejs22.x in Lambda (docs/operations.md,
//   "Deploy to AWS (the CDK stack)"), so the bundle uses nothing newer than Node 20.
// - The AWS SDK is bundled, not taken from the Lambda runtime: the commit protocol relies on
//   PutObject's `IfNoneMatch` and the S3 client's behaviour on 409/412, so the version the
//   tests ran against is the version that runs.
// - Minified with a linked source map (the functions run with
//   NODE_OPTIONS=--enable-source-maps) so stack traces name the TypeScript files.

import { join } from 'node:path'
import { type BundlingOptions, LogLevel, OutputFormat, SourceMapMode } from 'aws-cdk-lib/aws-lambda-nodejs'

export const REPO_ROOT = join(import.meta.dirname, '..')

export const ESM_REQUIRE_BANNER =
  "import { createRequire as __strataCreateRequire } from 'node:module'; const require = __strataCreateRequire(import.meta.url);"

export const BUNDLING: BundlingOptions = {
  format: OutputFormat.ESM,
  target: 'node20',
  mainFields: ['module', 'main'],
  banner: ESM_REQUIRE_BANNER,
  minify: true,
  sourceMap: true,
  // a linked map: a separate file and the sourceMappingURL comment Node needs to find it
  sourceMapMode: SourceMapMode.DEFAULT,
  sourcesContent: false,
  bundleAwsSDK: true,
  externalModules: [],
  logLevel: LogLevel.WARNING,
}

/** The handler modules; each exports `handler`. */
export const ENTRIES = {
  writer: join(REPO_ROOT, 'functions', 'writer.ts'),
  compactor: join(REPO_ROOT, 'functions', 'compactor.ts'),
  reader: join(REPO_ROOT, 'functions', 'reader.ts'),
  maintenance: join(REPO_ROOT, 'functions', 'maintenance.ts'),
  committer: join(REPO_ROOT, 'functions', 'committer.ts'),
  tableInit: join(REPO_ROOT, 'cdk', 'handlers', 'table-init.ts'),
} as const

export type FunctionKind = keyof typeof ENTRIES

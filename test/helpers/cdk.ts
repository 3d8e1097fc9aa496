// CDK template tests' shared synthesis: the stack built from a deploy config with the
// repository's cdk.json context, bundling skipped (the tests read the template only).

import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { App, type AppProps, type CfnElement } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { afterAll } from 'vitest'
import { buildApp } from '../../cdk/app.ts'
import { logicalIdOf } from '../../cdk/nag.ts'
import type { StrataStack } from '../../cdk/stack.ts'

export const CDK_CONTEXT = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'cdk.json'), 'utf8')).context

export interface Synth {
  app: App
  stack: StrataStack
  template: Template
  resources: Record<string, { Type: string; Properties: Record<string, any>; DependsOn?: string[] }>
}

// An App without an outdir makes a cdk.out directory of its own in the temp directory, and
// never removes it: every app of a test file gets one that is removed after the file.
const outdirs: string[] = []
afterAll(() => {
  for (const dir of outdirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** An App whose cloud assembly goes to a directory removed after the test file. */
export function testApp(props: Omit<AppProps, 'outdir'> = {}): App {
  const outdir = mkdtempSync(join(tmpdir(), 'strata-cdk-'))
  outdirs.push(outdir)
  return new App({ ...props, outdir })
}

export function synth(config: unknown): Synth {
  // aws:cdk:bundling-stacks [] skips esbuild
  const app = testApp({ context: { ...CDK_CONTEXT, strata: config, 'aws:cdk:bundling-stacks': [] } })
  const { stack } = buildApp(app)
  const template = Template.fromStack(stack)
  return { app, stack, template, resources: template.toJSON().Resources }
}

/** The logical id of a construct's CloudFormation resource. */
export const idOf = (c: { node: { defaultChild?: unknown } }) => logicalIdOf(c.node.defaultChild as CfnElement)
/** The template's resources of one type, as [logical id, resource]. */
export const ofType = (s: Synth, type: string) => Object.entries(s.resources).filter(([, r]) => r.Type === type)

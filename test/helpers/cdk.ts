// CDK template tests' shared synthesis: the stack built from a deploy config with the
// repository's cdk.json context, bundling skipped (the tests read the template only).

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { App, type CfnElement } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
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

export function synth(config: unknown): Synth {
  // aws:cdk:bundling-stacks [] skips esbuild
  const app = new App({ context: { ...CDK_CONTEXT, strata: config, 'aws:cdk:bundling-stacks': [] } })
  const { stack } = buildApp(app)
  const template = Template.fromStack(stack)
  return { app, stack, template, resources: template.toJSON().Resources }
}

/** The logical id of a construct's CloudFormation resource. */
export const idOf = (c: { node: { defaultChild?: unknown } }) => logicalIdOf(c.node.defaultChild as CfnElement)
/** The template's resources of one type, as [logical id, resource]. */
export const ofType = (s: Synth, type: string) => Object.entries(s.resources).filter(([, r]) => r.Type === type)

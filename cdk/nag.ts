// cdk-nag (v3) findings acknowledged with a written reason. v3 acknowledges through CDK's
// own Validations API, one finding at a time: a rule with several findings on a resource
// (IAM5 names each wildcard) takes one acknowledgement per finding, so every suppressed
// wildcard is listed by name here or by its caller.

import { Stack, Validations } from 'aws-cdk-lib'
import type { CfnElement } from 'aws-cdk-lib'
import type { IConstruct } from 'constructs'

export function acknowledge(scope: IConstruct, id: string, reason: string): void {
  Validations.of(scope).acknowledge({ id: `AwsSolutions-${id}`, reason })
}

/**
 * A resource ARN as cdk-nag names it in a finding (`Resource::<…>`): the resolved value with
 * Fn::Join joined, Ref as `<id>` and Fn::GetAtt as `<id.Attr>`.
 */
export function findingName(scope: IConstruct, arn: string): string {
  const flat = (v: unknown): string => {
    if (typeof v === 'string') return v.replace(/\$\{/g, '<').replace(/\}/g, '>')
    const o = v as Record<string, any>
    if (Array.isArray(o?.['Fn::Join'])) return (o['Fn::Join'][1] as unknown[]).map(flat).join(o['Fn::Join'][0])
    if (o?.['Fn::Sub'] !== undefined) return flat(o['Fn::Sub'])
    if (Array.isArray(o?.['Fn::GetAtt'])) return `<${flat(o['Fn::GetAtt'][0])}.${flat(o['Fn::GetAtt'][1])}>`
    if (o?.['Fn::ImportValue'] !== undefined) return flat(o['Fn::ImportValue'])
    if (o?.Ref !== undefined) return `<${flat(o.Ref)}>`
    return JSON.stringify(v)
  }
  return flat(Stack.of(scope).resolve(arn))
}

/** The logical id of a CloudFormation element, as cdk-nag writes it in a finding. */
export function logicalIdOf(element: CfnElement): string {
  return Stack.of(element).resolve(element.logicalId) as string
}

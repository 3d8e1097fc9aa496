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

/** The logical id of a CloudFormation element, as cdk-nag writes it in a finding. */
export function logicalIdOf(element: CfnElement): string {
  return Stack.of(element).resolve(element.logicalId) as string
}

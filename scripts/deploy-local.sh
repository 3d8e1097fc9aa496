#!/usr/bin/env bash
# Deploys the Strata stack into a running LocalStack with cdklocal (aws-cdk-local).
#
# Needs LocalStack >= 3.7 (its S3 answers PutObject `If-None-Match: *`, which the commit
# protocol relies on) with Docker for its Lambda runtime. These project machines have no
# Docker, so this script is not part of `npm test` or CI and has not been run here.
#
#   npm run deploy:local                      # cdk/strata.config.json
#   STRATA_CONFIG=my.json npm run deploy:local
#
# Writes the stack outputs to .tmp/localstack-outputs.json for `npm run smoke:local`.
set -euo pipefail
cd "$(dirname "$0")/.."

export AWS_ENDPOINT_URL="${AWS_ENDPOINT_URL:-http://localhost:4566}"
# cdklocal detects S3 requests by a `.s3.` in this URL
export AWS_ENDPOINT_URL_S3="${AWS_ENDPOINT_URL_S3:-http://s3.localhost.localstack.cloud:4566}"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_REGION="$AWS_DEFAULT_REGION"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
# cdklocal (aws-cdk >= 2.177) drops AWS_* variables unless they are allow-listed
export AWS_ENVAR_ALLOWLIST="AWS_REGION,AWS_DEFAULT_REGION,AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY"
CONFIG="${STRATA_CONFIG:-cdk/strata.config.json}"
ACCOUNT=000000000000

health="$(curl -fsS "$AWS_ENDPOINT_URL/_localstack/health" 2>/dev/null)" || {
  echo "deploy-local: no LocalStack at $AWS_ENDPOINT_URL (start it with 'localstack start', which needs Docker)" >&2
  exit 1
}
node -e '
  const h = JSON.parse(process.argv[1]);
  const [maj, min] = String(h.version ?? "0.0").split(".").map(Number);
  if (maj < 3 || (maj === 3 && min < 7)) {
    console.error(`deploy-local: LocalStack ${h.version} is too old; Strata needs >= 3.7 (S3 If-None-Match conditional writes)`);
    process.exit(1);
  }
  console.log(`deploy-local: LocalStack ${h.version} (${h.edition ?? "unknown"} edition)`);
' "$health"

mkdir -p .tmp
npx cdklocal bootstrap "aws://$ACCOUNT/$AWS_DEFAULT_REGION" -c config="$CONFIG"
npx cdklocal deploy --all --require-approval never -c config="$CONFIG" --outputs-file .tmp/localstack-outputs.json "$@"
echo "deploy-local: outputs in .tmp/localstack-outputs.json; next: npm run smoke:local"

#!/usr/bin/env bash
# Deploys the Strata stack into a running LocalStack with cdklocal (aws-cdk-local).
#
# Needs LocalStack >= 3.7 (its S3 answers PutObject `If-None-Match: *`, which the commit
# protocol relies on) with Docker for its Lambda runtime. These project machines have no
# Docker, so this script is not part of `npm test` or CI and has not been run here.
#
# Every function is arm64. On an x86-64 host LocalStack runs them as arm64 too (in emulation,
# which Docker often lacks: the functions then fail to start) unless its container has
# LAMBDA_IGNORE_ARCHITECTURE=1, which runs them in the host's architecture (the bundles are
# plain JavaScript and run on either):
#
#   LAMBDA_IGNORE_ARCHITECTURE=1 localstack start     # the CLI passes it to the container
#
# The script looks at the running LocalStack container (docker inspect) and refuses to deploy
# into one on an x86-64 host without it; STRATA_ALLOW_ARM64_EMULATION=1 deploys anyway (a
# host with QEMU binfmt emulation installed). When it cannot tell (LocalStack elsewhere, no
# docker CLI), it says so and goes on.
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
  echo "deploy-local: no LocalStack at $AWS_ENDPOINT_URL (start it with 'LAMBDA_IGNORE_ARCHITECTURE=1 localstack start', which needs Docker)" >&2
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

# --- arm64 functions on this host --------------------------------------------------------
is_true() { case "$(printf '%s' "${1:-}" | tr '[:upper:]' '[:lower:]')" in 1 | true | yes) return 0 ;; *) return 1 ;; esac; }

ARCH_FIX="start LocalStack with LAMBDA_IGNORE_ARCHITECTURE=1 (e.g. 'localstack stop && LAMBDA_IGNORE_ARCHITECTURE=1 localstack start', or 'environment: [LAMBDA_IGNORE_ARCHITECTURE=1]' in docker compose)"

check_lambda_architecture() {
  local host
  host="$(printf '%s' "$AWS_ENDPOINT_URL" | sed -E 's#^[a-z]+://##; s#[/:].*$##')"
  case "$host" in
    localhost | 127.* | localhost.localstack.cloud | *.localhost.localstack.cloud | host.docker.internal) ;;
    *)
      echo "deploy-local: note: LocalStack runs on $host; if that host is x86-64, its container needs LAMBDA_IGNORE_ARCHITECTURE=1 to run Strata's arm64 functions" >&2
      return 0
      ;;
  esac
  local arch
  arch="$(uname -m)"
  case "$arch" in
    x86_64 | amd64 | i386 | i686) ;;
    *) return 0 ;; # an arm64 host runs the arm64 functions natively
  esac

  # the LocalStack container: MAIN_CONTAINER_NAME (LocalStack's own setting), else the one
  # running container of a localstack image
  local container="${MAIN_CONTAINER_NAME:-}" env
  if ! command -v docker >/dev/null 2>&1; then
    echo "deploy-local: note: this host is $arch and Strata's functions are arm64; no docker CLI here to check that LocalStack has LAMBDA_IGNORE_ARCHITECTURE=1. If the functions fail to start, $ARCH_FIX." >&2
    return 0
  fi
  if [ -z "$container" ]; then
    local found
    found="$(docker ps --format '{{.Names}} {{.Image}}' 2>/dev/null | awk '$2 ~ /^(.*\/)?localstack\/localstack(-pro)?(:|@|$)/ { print $1 }')" || found=""
    if [ "$(printf '%s\n' "$found" | grep -c .)" = 1 ]; then
      container="$found"
    else
      container="localstack-main"
    fi
  fi
  if ! env="$(docker inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$container" 2>/dev/null)"; then
    echo "deploy-local: note: this host is $arch and Strata's functions are arm64; cannot inspect a LocalStack container named '$container' (set MAIN_CONTAINER_NAME to its name) to check LAMBDA_IGNORE_ARCHITECTURE. If the functions fail to start, $ARCH_FIX." >&2
    return 0
  fi
  local value
  value="$(printf '%s\n' "$env" | sed -n 's/^LAMBDA_IGNORE_ARCHITECTURE=//p' | tail -n 1)"
  if is_true "$value"; then
    echo "deploy-local: LocalStack container '$container' has LAMBDA_IGNORE_ARCHITECTURE=$value: the arm64 functions run as $arch"
    return 0
  fi
  if is_true "${STRATA_ALLOW_ARM64_EMULATION:-}"; then
    echo "deploy-local: warning: LocalStack container '$container' lacks LAMBDA_IGNORE_ARCHITECTURE=1 on this $arch host; deploying anyway (STRATA_ALLOW_ARM64_EMULATION): the arm64 functions need QEMU emulation in Docker" >&2
    return 0
  fi
  echo "deploy-local: LocalStack container '$container' runs on an $arch host without LAMBDA_IGNORE_ARCHITECTURE=1 (it has ${value:-no value}), so it would run Strata's arm64 functions as arm64, which needs QEMU emulation and usually fails to start them." >&2
  echo "deploy-local: $ARCH_FIX; or set STRATA_ALLOW_ARM64_EMULATION=1 to deploy anyway." >&2
  exit 1
}
check_lambda_architecture

mkdir -p .tmp
npx cdklocal bootstrap "aws://$ACCOUNT/$AWS_DEFAULT_REGION" -c config="$CONFIG"
npx cdklocal deploy --all --require-approval never -c config="$CONFIG" --outputs-file .tmp/localstack-outputs.json "$@"
echo "deploy-local: outputs in .tmp/localstack-outputs.json; next: npm run smoke:local"

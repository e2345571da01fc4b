#!/usr/bin/env bash
# Fuzzes jdist's configuration readers (ring hostfiles and environment, JACCL device files and
# environment, nccl environment) in one JVM, offline: mutated inputs, each judged by an independent
# oracle (dev.jdist.fuzz.ConfigOracle: Gson's strict JSON reader and the documented rules).
#
#   bench/chaos/fuzz-config.sh [cases] [seed]      (defaults: 1000000 cases, a seed from the clock)
#
# Prints the counts (crashes, hangs, invalid inputs accepted, valid inputs rejected) and up to 20
# failing cases with their inputs; exits 1 when there is any. The test suite runs the same fuzzer
# with 10,000 cases and a fixed seed (ConfigFuzzTest); rerun a failing seed here with a bigger count.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
# shellcheck source=../../bin/lib/common.sh
source "$ROOT/bin/lib/common.sh"
jdist_find_jdk
jdist_find_maven
CASES=${1:-1000000}
SEED=${2:-$(date +%s%N)}
cd "$ROOT"
CP_FILE=$(mktemp "${TMPDIR:-/tmp}/jdist-fuzz-cp.XXXXXX")
trap 'rm -f "$CP_FILE"' EXIT
mvn -B -q -o -pl jdist-core test-compile dependency:build-classpath -Dmdep.outputFile="$CP_FILE" -Dmdep.includeScope=test \
  || mvn -B -q -pl jdist-core test-compile dependency:build-classpath -Dmdep.outputFile="$CP_FILE" -Dmdep.includeScope=test
CP="$ROOT/jdist-core/target/test-classes:$ROOT/jdist-core/target/classes:$(cat "$CP_FILE")"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); cases=$CASES seed=$SEED"
exec "$JAVA_HOME/bin/java" --add-modules=jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx1g -cp "$CP" \
  dev.jdist.fuzz.ConfigFuzzer "$CASES" "$SEED" 2> >(grep -v 'incubator' >&2)

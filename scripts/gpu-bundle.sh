#!/usr/bin/env bash
# Builds what scripts/gpu-check.sh needs on a GPU machine that has no JDK: a jlinked Java runtime
# (java.base + jdk.incubator.vector, the modules jdist-core needs: `jdeps --print-module-deps`) and
# jdist-core's classes, in target/gpu-bundle/ (about 45 MiB). Carry that folder with the working tree
# (for a device run: carry ["target/gpu-bundle"]) and run scripts/gpu-check.sh there.
#
#   scripts/gpu-bundle.sh            # builds with the JDK 25 here (JAVA_HOME or /usr/lib/jvm)
#   JDIST_GPU_BUNDLE_NO_BUILD=1 scripts/gpu-bundle.sh   # takes jdist-core/target/classes as they are (tests)
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# shellcheck source=../bin/lib/common.sh
source "$ROOT/bin/lib/common.sh"
jdist_find_jdk
BUNDLE="$ROOT/target/gpu-bundle"
cd "$ROOT"
if [ -z "${JDIST_GPU_BUNDLE_NO_BUILD:-}" ]; then
  jdist_find_maven
  mvn -B -q -o -pl jdist-core compile 2>/dev/null || mvn -B -q -pl jdist-core compile
fi
[ -f jdist-core/target/classes/dev/jdist/nccl/NcclCheck.class ] || { echo "gpu-bundle.sh: jdist-core is not compiled" >&2; exit 1; }
MODULES=$("$JAVA_HOME/bin/jdeps" --multi-release 25 --ignore-missing-deps --print-module-deps jdist-core/target/classes 2>/dev/null | tail -1)
case "$MODULES" in java.base*) ;; *) echo "gpu-bundle.sh: jdeps did not answer (got '$MODULES')" >&2; exit 1 ;; esac
rm -rf "$BUNDLE"
mkdir -p "$BUNDLE"
"$JAVA_HOME/bin/jlink" --add-modules "$MODULES" --strip-debug --no-man-pages --no-header-files --compress zip-9 \
  --output "$BUNDLE/runtime" 2> >(grep -v 'incubator' >&2)
cp -r jdist-core/target/classes "$BUNDLE/classes"
"$BUNDLE/runtime/bin/java" -version 2>&1 | head -1 > "$BUNDLE/VERSION"
echo "modules: $MODULES" >> "$BUNDLE/VERSION"
echo "built: $(date -u +%FT%TZ) from $(git rev-parse --short HEAD 2>/dev/null || echo '?')" >> "$BUNDLE/VERSION"
echo "gpu-bundle.sh: $BUNDLE ($(du -sh "$BUNDLE" | cut -f1); runtime $(du -sh "$BUNDLE/runtime" | cut -f1), classes $(du -sh "$BUNDLE/classes" | cut -f1)); modules $MODULES"

# Shared by the bench/*-report.sh and *-cost.sh scripts (sourced after bin/lib/common.sh and jdist_find_jdk, with OUT
# set): the machine lines every result file starts and ends with, one measurement into its own file, and the JMH jar.

# Date, host, cores, memory, OS, kernel, JDK and load: the facts a figure is quoted with.
bench_machine() {
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC') host $(hostname), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(. /etc/os-release && echo "$PRETTY_NAME"), $(uname -r)"
  echo "# $("$JDIST_JDK/bin/java" -version 2>&1 | head -1); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# bench_run NAME COMMAND...: runs COMMAND into $OUT/NAME.txt between two machine headers (the load before and after).
bench_run() {
  local name=$1; shift
  echo "== $name: $*" >&2
  { bench_machine; echo "# command: $*"; "$@" 2>&1; bench_machine; } > "$OUT/$name.txt"
}

# Builds jdist-jmh/target/benchmarks.jar when it is missing or older than the sources it measures.
bench_jmh_jar() {
  if [ ! -f "$ROOT/jdist-jmh/target/benchmarks.jar" ] || [ -n "$(find "$ROOT/jdist-core/src/main" "$ROOT/jdist-jmh/src/main" -newer "$ROOT/jdist-jmh/target/benchmarks.jar" -print -quit)" ]; then
    jdist_find_maven
    (cd "$ROOT" && jdist_mvn -B -q package -Dmaven.test.skip=true -Dmaven.javadoc.skip=true -Dmaven.source.skip=true -pl jdist-jmh -am)
  fi
}

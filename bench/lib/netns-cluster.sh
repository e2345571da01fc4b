# Shared by bench/cluster/run.sh and bench/chaos/run.sh (sourced after bin/lib/common.sh and jdist_find_jdk): holds a
# NetnsCluster (jdist-testing) for a script — N network namespaces with sshd on a private bridge — and sources its
# description (CLUSTER_NAMESPACES, CLUSTER_ADDRESSES, CLUSTER_ALIASES, CLUSTER_BRIDGE, CLUSTER_BRIDGE_PORTS,
# CLUSTER_SUBNET, CLUSTER_SSH_BIN). The cluster removes itself when the script's process ($$) ends or on SIGTERM.

# netns_cluster_start N WORKDIR LOG [NETWORKS]: starts the cluster (building jdist-testing first when needed; NETWORKS:
# interfaces eth0.. per host, each on a bridge of its own, default 1), waits up to 120 s for it, sources its description
# and sets CLUSTER_PID. Fails with the fixture's log when it does not start.
netns_cluster_start() {
  local n=$1 work=$2 logfile=$3 networks=${4:-1} testing=$ROOT/jdist-testing
  if [ ! -f "$testing/target/classpath.txt" ] || [ ! -f "$testing/target/classes/dev/jdist/testing/NetnsClusterMain.class" ] \
      || [ -n "$(find "$testing/src/main/java" -newer "$testing/target/classes/dev/jdist/testing/NetnsClusterMain.class" -print -quit)" ]; then
    jdist_find_maven
    local mvn=(-B -q -pl jdist-testing -am compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt)
    (cd "$ROOT" && { jdist_mvn -o "${mvn[@]}" >"$work/mvn.log" 2>&1 || jdist_mvn "${mvn[@]}" >"$work/mvn.log" 2>&1; }) \
      || { tail -30 "$work/mvn.log" >&2; echo "building the cluster fixture (jdist-testing) failed" >&2; return 1; }
  fi
  "$JDIST_JDK/bin/java" -cp "$testing/target/classes:$(cat "$testing/target/classpath.txt")" \
    dev.jdist.testing.NetnsClusterMain "$n" "$work/cluster.env" $$ "$networks" >"$logfile" 2>&1 &
  CLUSTER_PID=$!
  local _
  for _ in $(seq 240); do
    [ -f "$work/cluster.env" ] && break
    kill -0 "$CLUSTER_PID" 2>/dev/null || break
    sleep 0.5
  done
  [ -f "$work/cluster.env" ] || { cat "$logfile" >&2; echo "the namespace cluster did not start" >&2; return 1; }
  # shellcheck disable=SC1091
  source "$work/cluster.env"
}

# Shared by bin/jdist and bin/test: find a JDK >= 25 and Maven, install what is missing when root.
# shellcheck shell=bash

jdist_root() { cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd; }

# Prints the major version of the JDK at $1 (a JAVA_HOME), or nothing.
_jdk_major() {
  local home=$1 v
  [ -x "$home/bin/java" ] && [ -x "$home/bin/javac" ] || return 0
  if [ -f "$home/release" ]; then
    v=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$home/release")
  else
    v=$("$home/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  fi
  echo "${v:-}"
}

# Sets JAVA_HOME to a JDK >= 25: $JAVA_HOME if new enough, else the newest under /usr/lib/jvm, else javac on PATH.
jdist_find_jdk() {
  local candidates=() c best="" best_v=0 v
  [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME")
  for c in /usr/lib/jvm/* /opt/java/* /opt/jdk* "$HOME"/.sdkman/candidates/java/*; do
    [ -d "$c" ] && candidates+=("$c")
  done
  if command -v javac >/dev/null 2>&1; then
    candidates+=("$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")")
  fi
  for c in "${candidates[@]}"; do
    v=$(_jdk_major "$c")
    if [ -n "$v" ] && [ "$v" -ge 25 ] && [ "$v" -gt "$best_v" ]; then best=$c; best_v=$v; fi
    # Prefer an explicit JAVA_HOME that qualifies.
    if [ -n "$best" ] && [ "$c" = "${JAVA_HOME:-}" ]; then break; fi
  done
  if [ -z "$best" ]; then
    echo "jdist: no JDK >= 25 found (looked at \$JAVA_HOME, /usr/lib/jvm, and javac on PATH)." >&2
    echo "jdist: install a JDK 25 (for example Temurin 25) and set JAVA_HOME to it." >&2
    return 1
  fi
  export JAVA_HOME=$best
  export PATH="$JAVA_HOME/bin:$PATH"
}

# Installs Debian packages that are missing (only as root; otherwise says what to install).
jdist_apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "jdist: missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
    return 1
  fi
  echo "jdist: installing ${missing[*]}" >&2
  if [ -z "${_JDIST_APT_UPDATED:-}" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || true
    export _JDIST_APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

jdist_find_maven() {
  command -v mvn >/dev/null 2>&1 || jdist_apt_install maven || {
    echo "jdist: Maven is needed to build jdist; install it (apt-get install maven)." >&2
    return 1
  }
  # Maven 3.8's bundled Guava calls sun.misc.Unsafe; keep JDK 25 quiet about it.
  export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"
}

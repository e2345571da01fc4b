# Shared by bin/jdist, bin/test and the scripts: find a JDK >= 25 and Maven, install what is missing when root.
# shellcheck shell=bash
#
# The caller's environment is not changed: these functions set shell variables (JDIST_JDK), and Maven gets
# its JAVA_HOME and MAVEN_OPTS only on its own command line (jdist_mvn). Call jdist_own_path first: it keeps
# the caller's PATH aside and puts the system directories first for this script's own tools.

# The directories this script's own tools (readlink, find, flock, sed, apt-get, mvn) are looked up in first.
JDIST_SYSTEM_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# Keeps the caller's PATH in _JDIST_CALLER_PATH (unset if PATH was unset) and searches the system
# directories first, then the caller's. jdist_caller_path restores it before exec.
jdist_own_path() {
  if [ -n "${PATH+set}" ]; then _JDIST_CALLER_PATH=$PATH; else unset _JDIST_CALLER_PATH; fi
  PATH=$JDIST_SYSTEM_PATH${_JDIST_CALLER_PATH:+:$_JDIST_CALLER_PATH}
}

jdist_caller_path() {
  if [ -n "${_JDIST_CALLER_PATH+set}" ]; then PATH=$_JDIST_CALLER_PATH; else unset PATH; fi
}

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

# Sets JDIST_JDK to a JDK >= 25: $JAVA_HOME if new enough, else the newest under /usr/lib/jvm (and a few
# usual places), else the one javac on the caller's PATH belongs to. Exports nothing.
jdist_find_jdk() {
  local candidates=() c best="" best_v=0 v javac_path
  [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME")
  for c in /usr/lib/jvm/* /opt/java/* /opt/jdk* "${HOME:-/nonexistent}"/.sdkman/candidates/java/*; do
    [ -d "$c" ] && candidates+=("$c")
  done
  javac_path=$(PATH=${_JDIST_CALLER_PATH-$PATH} command -v javac 2>/dev/null || true)
  if [ -n "$javac_path" ]; then
    candidates+=("$(dirname "$(dirname "$(readlink -f "$javac_path")")")")
  fi
  for c in "${candidates[@]}"; do
    v=$(_jdk_major "$c")
    if [ -n "$v" ] && [ "$v" -ge 25 ] && [ "$v" -gt "$best_v" ]; then best=$c; best_v=$v; fi
    # Prefer an explicit JAVA_HOME that qualifies.
    if [ -n "$best" ] && [ "$c" = "${JAVA_HOME:-}" ]; then break; fi
  done
  if [ -z "$best" ]; then
    echo "jdist: no JDK >= 25 found (looked at \$JAVA_HOME, /usr/lib/jvm, /opt and javac on PATH)." >&2
    echo "jdist: install a JDK 25 (for example Temurin 25) and set JAVA_HOME to it." >&2
    return 1
  fi
  JDIST_JDK=$best
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
    _JDIST_APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# Sets JDIST_MVN to Maven's mvn (installing Debian's maven as root when there is none).
jdist_find_maven() {
  JDIST_MVN=$(command -v mvn 2>/dev/null || true)
  if [ -z "$JDIST_MVN" ]; then
    jdist_apt_install maven || {
      echo "jdist: Maven is needed to build jdist; install it (apt-get install maven)." >&2
      return 1
    }
    JDIST_MVN=$(command -v mvn)
  fi
}

# Runs Maven with the JDK jdist_find_jdk chose. Maven 3.8's bundled Guava calls sun.misc.Unsafe; keep
# JDK 25 quiet about it.
jdist_mvn() {
  JAVA_HOME=$JDIST_JDK MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow" "$JDIST_MVN" "$@"
}

# Prints a property of the root pom (the one place jdist's version, dependency versions and JVM flags are
# defined), with ${other.property} references expanded: jdist_pom_property ROOT NAME.
jdist_pom_property() {
  local v ref
  v=$(sed -n "s:.*<$2>\(.*\)</$2>.*:\1:p" "$1/pom.xml" | head -1)
  while [[ $v =~ \$\{([A-Za-z0-9._-]+)\} ]]; do
    ref=${BASH_REMATCH[1]}
    v=${v//\$\{$ref\}/$(jdist_pom_property "$1" "$ref")}
  done
  echo "$v"
}

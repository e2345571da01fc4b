# Sourced first by the bench/*.sh scripts, as
#   source "$(PATH=/usr/bin:/bin; dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib/start.sh"
# Sets ROOT (the checkout), loads bin/lib/common.sh and bench/lib/report.sh, puts the system's directories first on
# PATH (jdist_own_path) and finds Java 25 (JDIST_JDK).
ROOT=$(PATH=/usr/bin:/bin; cd "$(dirname "$(readlink -f "${BASH_SOURCE[1]}")")/.." && pwd)
# shellcheck source=../../bin/lib/common.sh
source "$ROOT/bin/lib/common.sh"
# shellcheck source=report.sh
source "$ROOT/bench/lib/report.sh"
jdist_own_path
jdist_find_jdk

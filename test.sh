#!/usr/bin/env bash
# Runs every test: installs what the tests need first (scripts/prereqs.sh test: the build's
# packages plus cmocka, clang, qemu-user), then `mvn -B -ntp test`: the C tests in a Release and
# an ASan+UBSan build, the fuzzers, the shipped libraries' checks, the Java suite on JNI (JDK 17)
# and FFM (JDK 25), the system tests and the benchmark module's tests. Arguments go to Maven
# (e.g. ./test.sh -Dpar.sanitize=false -Dpar.fuzz=false for a quicker local run).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

jdk25=${PAR_JDK25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
scripts/prereqs.sh test
jdk25_arg=()
[[ "$jdk25" != /usr/lib/jvm/temurin-25-jdk-amd64 ]] && jdk25_arg=("-Dpar.jdk25.home=$jdk25")
exec mvn -B -ntp test "${jdk25_arg[@]}" "$@"

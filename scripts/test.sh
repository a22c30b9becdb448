#!/usr/bin/env bash
# Canopy's whole test suite, the one command of README.md and of CI (.ci/run):
#   1. installs the LDAP clients, Debian's slapd and MIT Kerberos (the GSSAPI library to link, a KDC for
#      the GSSAPI tests) when any is missing (apt, non-interactive);
#   2. cargo fmt --check and cargo clippy -D warnings over the workspace;
#   3. builds the canopy binary and runs every test (unit tests and the end-to-end suite);
#      these include the crate layering and `//!` first-line checks (crates/harness/tests/layering.rs);
#   4. runs the end-to-end suite against Debian's slapd, proving the expected files are OpenLDAP's
#      behaviour (skip with CANOPY_SKIP_SLAPD_REFERENCE=1 outside CI);
#   5. runs the crash test (kill -9 during acknowledged writes, five times);
#   6. runs the randomized replication harness on seeds 1-20 (each topology twice, with and without slapd;
#      CANOPY_REPL_SEEDS overrides; scripts/soak-replication runs many more);
#   7. runs the differential conformance test against slapd (filters and generated write sequences);
#   8. fuzzes every cargo-fuzz target briefly (fuzz/run.sh; CANOPY_FUZZ_SECONDS per target, default 20).
# Every step runs even after a failure; the exit status is non-zero if any step failed.
# CANOPY_E2E_TARGET=slapd runs steps 3 and 5 against slapd instead of canopy (docs/testing.md).
set -uo pipefail
cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
PACKAGES=(ldap-utils slapd slapd-contrib python3-ldap libsasl2-modules python3-prometheus-client
    libkrb5-dev krb5-kdc krb5-admin-server krb5-user libsasl2-modules-gssapi-mit sasl2-bin)
failed=()

step() {
    local name=$1
    shift
    echo "==> $name"
    local start=$SECONDS
    if "$@"; then
        echo "<== $name: ok ($((SECONDS - start)) s)"
    else
        echo "<== $name: FAILED ($((SECONDS - start)) s)"
        failed+=("$name")
    fi
}

missing_packages() {
    local p
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' \
            || echo "$p"
    done
}

install_clients() {
    local missing
    missing=$(missing_packages)
    [ -z "$missing" ] && return 0
    echo "installing: $missing"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "not root and no sudo: install $missing by hand"; return 1; }
        sudo="sudo -E"
    fi
    # The suite starts its own slapd processes: the package must not configure or start a system
    # instance. debconf's no_configuration skips the database setup; policy-rc.d (exit 101 =
    # action forbidden) keeps the service from starting during the install.
    echo "slapd slapd/no_configuration boolean true" | $sudo debconf-set-selections
    local policy_created=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
        $sudo chmod 755 /usr/sbin/policy-rc.d
        policy_created=1
    fi
    local rc=0
    $sudo apt-get update -q && $sudo apt-get install -y -q --no-install-recommends "${PACKAGES[@]}" || rc=1
    [ -n "$policy_created" ] && $sudo rm -f /usr/sbin/policy-rc.d
    return $rc
}

check_clients() {
    local t ok=0
    for t in ldapsearch ldapadd ldapmodify ldapdelete ldapmodrdn ldapcompare ldapwhoami ldappasswd; do
        command -v "$t" >/dev/null || { echo "missing client: $t"; ok=1; }
    done
    [ -x /usr/sbin/slapd ] || { echo "missing /usr/sbin/slapd"; ok=1; }
    /usr/bin/python3 -c 'import ldap' 2>/dev/null || { echo "missing python3-ldap for /usr/bin/python3"; ok=1; }
    /usr/bin/python3 -c 'import prometheus_client' 2>/dev/null \
        || { echo "missing python3-prometheus-client for /usr/bin/python3"; ok=1; }
    return $ok
}

step "install LDAP clients and slapd" install_clients
if ! check_clients; then
    # Under CI a missing client is a failure, never a skip; elsewhere the e2e tests fail anyway,
    # each with a message naming what is missing.
    failed+=("LDAP clients present")
fi

step "cargo fmt --check" cargo fmt --all --check
step "cargo clippy" cargo clippy --workspace --all-targets -- -D warnings

target="${CANOPY_E2E_TARGET:-canopy}"
if [ "$target" = canopy ] && [ -z "${CANOPY_BIN:-}" ]; then
    step "cargo build -p canopy" cargo build -p canopy
    export CANOPY_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/canopy"
fi
export CANOPY_E2E_TARGET="$target"

step "cargo test --workspace (target: $target)" cargo test --workspace
if [ "$target" != slapd ] && { [ "${CI:-}" = true ] || [ -z "${CANOPY_SKIP_SLAPD_REFERENCE:-}" ]; }; then
    step "e2e suite against Debian slapd (reference)" \
        env CANOPY_E2E_TARGET=slapd cargo test -p canopy-e2e --test e2e
fi
step "crash test (target: $target)" \
    cargo test -p canopy-e2e --test e2e -- --ignored crash --nocapture
if [ "$target" = canopy ]; then
    # Generated replication scenarios (docs/testing.md): topologies of canopy and slapd, preloaded
    # replicas, writes, kill -9, network cuts and SIGSTOP; every server must converge without losing an
    # acknowledged write. Under CI=true a missing slapd fails the step.
    repl_seeds="${CANOPY_REPL_SEEDS:-1-20}"
    step "replication model (seeds $repl_seeds)" \
        env CANOPY_REPL_SEEDS="$repl_seeds" cargo test -p canopy-e2e --test replication_model -- \
            --ignored --nocapture
fi
if [ "$target" = canopy ]; then
    # Differential conformance: the hand-written corpus, seeds 1-3 x 2000 random filters and
    # x 1000 generated write sequences, canopy against Debian's slapd on the same data; any difference
    # fails (docs/conformance.md).
    step "conformance against slapd (corpus + 3 seeds x 2000 filters x 1000 write sequences)" \
        cargo run -q -p canopy-conformance -- --canopy-bin "$CANOPY_BIN" --seed 1 2 3 --filters 2000 \
            --sequences 1000
fi
# A short coverage-guided run of every fuzz target from the committed seed corpus (docs/fuzzing.md).
step "fuzz (every target, ${CANOPY_FUZZ_SECONDS:-20} s each)" fuzz/run.sh "${CANOPY_FUZZ_SECONDS:-20}"

if [ ${#failed[@]} -eq 0 ]; then
    echo "scripts/test.sh: every step passed"
    exit 0
fi
echo "scripts/test.sh: FAILED steps:"
printf '  - %s\n' "${failed[@]}"
exit 1

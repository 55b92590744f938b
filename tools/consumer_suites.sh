#!/usr/bin/env bash
# Consumers' own functional suites against this package's fixtures, as
# they run them against upstream Placement's:
#
#   nova 34.0.0: nova.tests.functional.test_report_client, and the four
#     test_servers resize-over-quota tests that need upstream's policy
#     defaults (a second, non-admin user creating servers);
#   osc-placement 4.9.1: its whole functional suite (from its source
#     distribution, where its tests live).
#
# Each gets a venv of its own under WORKDIR (default .consumer-suites),
# with its test requirements and this package installed (not editable:
# as a consumer's CI installs it) instead of openstack-placement, and
# runs under stestr as the project's tox does.  Exit status non-zero
# if any test of either failed.
#
#   tools/consumer_suites.sh [WORKDIR]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORKDIR=$(mkdir -p "${1:-$ROOT/.consumer-suites}" && cd "${1:-$ROOT/.consumer-suites}" && pwd)
NOVA=34.0.0
OSC_PLACEMENT=4.9.1
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
status=0

venv() {  # venv NAME: a fresh venv under WORKDIR, its path printed
    rm -rf "$WORKDIR/$1"
    python3 -m venv "$WORKDIR/$1"
    echo "$WORKDIR/$1"
}

sdist() {  # sdist NAME VERSION: unpacked under WORKDIR/src, its path printed
    local dir="$WORKDIR/src"
    mkdir -p "$dir"
    compgen -G "$dir/${1//-/_}-$2.tar.gz" > /dev/null || \
        compgen -G "$dir/$1-$2.tar.gz" > /dev/null || \
        python3 -m pip download --quiet --no-deps --no-binary :all: \
            "$1==$2" -d "$dir"
    local archive
    archive=$(compgen -G "$dir/${1//-/_}-$2.tar.gz" || compgen -G "$dir/$1-$2.tar.gz")
    rm -rf "${archive%.tar.gz}"
    tar -xzf "$archive" -C "$dir"
    echo "${archive%.tar.gz}"
}

not_upstream() {  # the venv must not hold upstream's package
    if "$1/bin/pip" show openstack-placement > /dev/null 2>&1; then
        echo "openstack-placement is installed in $1" >&2
        return 1
    fi
}

echo "== nova $NOVA: test_report_client and the test_servers quota cases"
nova_src=$(sdist nova "$NOVA")
nova_venv=$(venv nova)
# Nova's own CI installs with the release's upper constraints, which
# keep SQLAlchemy below 2.1: 2.1 deprecates orm.noload(), which nova's
# database API uses, and nova's WarningsFixture makes that an error.
echo 'SQLAlchemy<2.1' > "$WORKDIR/nova-constraints.txt"
"$nova_venv/bin/pip" install --quiet -c "$WORKDIR/nova-constraints.txt" \
    "nova==$NOVA" -r "$nova_src/test-requirements.txt" "$ROOT[fixtures]"
not_upstream "$nova_venv"
# Nova's test configuration reads etc/nova/api-paste.ini from the
# directory above the nova package; the wheel put it in the venv's etc.
site=$("$nova_venv/bin/python" -c \
    'import sysconfig; print(sysconfig.get_paths()["purelib"])')
ln -sfn "$nova_venv/etc" "$site/etc"
rm -rf "$WORKDIR/nova-run" && mkdir -p "$WORKDIR/nova-run"
(
    cd "$WORKDIR/nova-run"
    # As nova's tox functional environment sets them.
    export OS_STDOUT_CAPTURE=1 OS_STDERR_CAPTURE=1 OS_TEST_TIMEOUT=160 \
        NOVA_RAISE_ON_GREENLET_LEAK=True
    "$nova_venv/bin/stestr" init > /dev/null
    "$nova_venv/bin/stestr" --test-path "$site/nova/tests/functional" \
        --top-dir "$site" run \
        'nova\.tests\.functional\.test_report_client\.' \
        'nova\.tests\.functional\.test_servers\.ServersTest(V21)?\.test_resize_server_overquota_(user_quota|multiple_users)$'
) || status=1

echo "== osc-placement $OSC_PLACEMENT: its functional suite"
osc_src=$(sdist osc-placement "$OSC_PLACEMENT")
osc_venv=$(venv osc-placement)
"$osc_venv/bin/pip" install --quiet "$osc_src" \
    -r "$osc_src/test-requirements.txt" "$ROOT[fixtures]"
not_upstream "$osc_venv"
(
    cd "$osc_src"
    # Its test_plugin runs `openstack --help` found on PATH.
    export PATH="$osc_venv/bin:$PATH" VIRTUAL_ENV="$osc_venv"
    "$osc_venv/bin/stestr" --test-path ./osc_placement/tests/functional run
) || status=1

exit "$status"

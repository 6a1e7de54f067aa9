#!/usr/bin/env bash
# Installs what building and testing wsload needs on Debian 12, skipping what is already there.
#   scripts/install-dependencies.sh          build dependencies (C libraries, pkg-config)
#   scripts/install-dependencies.sh --test   plus the real peers the tests run against
set -euo pipefail

packages=(pkg-config libuv1-dev libssl-dev zlib1g-dev)
if [[ "${1:-}" == "--test" ]]; then
    # openssl: a real TLS peer; iproute2: network namespaces; chromium: renders the HTML reports in a test;
    # nginx: a real HTTP file server for the transfer tests (started by the tests with their own configuration);
    # curl: a third-party HTTP client against the embedded server and `wsload serve`; libxml2-utils: xmllint, which
    # validates `--junit` output against the JUnit schema; prometheus: a real Prometheus (and its promtool) scraping
    # `run --metrics`, started by the test with its own configuration and data directory. (util-linux's prlimit,
    # setpriv and unshare are part of every Debian system.)
    packages+=(openssl iproute2 python3 python3-pip chromium nginx curl libxml2-utils prometheus)
    # slurm-wlm and munge: the single-node Slurm cluster a distribute test starts (scripts/slurm-cluster.sh);
    # --no-install-recommends below keeps them to the daemons and the client commands.
    packages+=(slurm-wlm munge)
    # rsync: scripts/mutants.sh copies the tree into its scratch worktree with it.
    packages+=(rsync)
    # node: `node --check` parses the dashboard's inline script in a test (any node will do; Debian's if none is on PATH).
    command -v node >/dev/null 2>&1 || packages+=(nodejs)
fi

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done

if ((${#missing[@]})); then
    sudo=""
    if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
    echo "Installing: ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ "${1:-}" == "--test" ]]; then
    # Python peers: websockets (a third-party WebSocket server for the interop tests) and hdrhistogram (the
    # reference HdrHistogram the Histogram tests check percentiles and the wire format against).
    pip_install() {
        local module="$1" requirement="$2"
        python3 -c "import $module" 2>/dev/null && return 0
        echo "Installing: $requirement (pip)" >&2
        # Debian's own python3 marks itself externally managed (PEP 668); Debian ships websockets 10,
        # too old for the asyncio server API, so install from PyPI there too.
        python3 -m pip install --quiet --disable-pip-version-check "$requirement" 2>/dev/null \
            || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "$requirement"
        python3 -c "import $module"
    }
    pip_install websockets.asyncio.server "websockets>=13"
    pip_install hdrh.histogram "hdrhistogram>=0.10"
    # The flow presets' real servers (Tests/Peers/socketio_server.py, graphql_server.py): python-socketio on
    # aiohttp, strawberry-graphql on uvicorn (ASGI, with starlette) for graphql-transport-ws.
    pip_install aiohttp "aiohttp>=3.9"
    pip_install socketio "python-socketio>=5.11"
    pip_install uvicorn "uvicorn[standard]>=0.30"
    pip_install starlette "starlette>=0.37"
    pip_install strawberry "strawberry-graphql>=0.240"
    # kubernetes-validate: the Kubernetes JSON schemas (bundled, offline) the distribute manifests are checked against.
    pip_install kubernetes_validate "kubernetes-validate>=1.37"
    # junitparser: a third-party JUnit XML reader (as CI tools read it), for what `--junit` writes
    # (Tests/Peers/junit_check.py).
    pip_install junitparser "junitparser>=3"
fi

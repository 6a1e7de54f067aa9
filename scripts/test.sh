#!/usr/bin/env bash
# The README's test command: installs build and test dependencies, then runs every test.
# Tests talk only to loopback and to network namespaces they create (which needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-dependencies.sh --test
swift build --build-tests
swift test --skip-build

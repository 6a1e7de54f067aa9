#!/usr/bin/env bash
# The README's first quick-start command: installs build dependencies, builds wsload (release) and runs
# Profiles/quickstart.json — 100 connections echoing against the embedded server for 15 seconds, live
# progress, a summary, thresholds, and a JSON report under Reports/runs/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-dependencies.sh
swift build -c release --product wsload
exec .build/release/wsload run Profiles/quickstart.json "$@"

#!/usr/bin/env bash
# The README's first quick-start command: installs build dependencies, builds wsload (release) and runs it.
# Until the load engine lands (issue #4) this shows the command overview; then it runs Profiles/quickstart.json.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-dependencies.sh
swift build -c release --product wsload
.build/release/wsload --help

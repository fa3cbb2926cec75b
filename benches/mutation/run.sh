#!/bin/sh
# Mutation check, bounded: cosmic-ray over one module with the fast tests its config names.
# cosmic-ray rewrites the module in place, so it runs on a copy of python/, tests/ and bpf/
# (the copy's package comes first on PYTHONPATH); the worktree is never touched.
#   benches/mutation/run.sh tune-settings.toml [TEST-COMMAND-OVERRIDE]
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
cfg="$here/benches/mutation/$1"
work=$(mktemp -d /tmp/shortflow-mutation-XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r "$here/python" "$here/tests" "$here/bpf" "$here/pyproject.toml" "$work/"
mkdir -p "$work/benches/mutation" && cp "$cfg" "$work/benches/mutation/"
sed -i "s#@PYTHON@#$here/.venv/bin/python#" "$work/benches/mutation/$1"
if [ $# -ge 2 ]; then
    sed -i "s#^test-command = .*#test-command = \"$2\"#" "$work/benches/mutation/$1"
fi
cd "$work"
"$here/.venv/bin/cosmic-ray" init "benches/mutation/$1" session.sqlite
"$here/.venv/bin/cosmic-ray" exec "benches/mutation/$1" session.sqlite
"$here/.venv/bin/cr-report" --show-pending session.sqlite > "$here/benches/mutation/${1%.toml}.report.txt" || true
cp session.sqlite "${MUTATION_KEEP:-/tmp}/${1%.toml}.sqlite"
tail -3 "$here/benches/mutation/${1%.toml}.report.txt"

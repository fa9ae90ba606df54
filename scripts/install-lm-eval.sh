#!/usr/bin/env bash
# Install lm-evaluation-harness (`lm-eval[api]`, pinned) once into its own virtual environment,
# cached under ~/.cache/specexp/lm-eval/<version>/, apart from specexp's venv (its datasets,
# evaluate, scikit-learn ... are not specexp's dependencies). Prints the path of its `lm_eval`
# executable on its last line. About a minute the first time; instant afterwards.
#
#   scripts/install-lm-eval.sh              # install if missing, print path
#   LM_EVAL_VERSION=0.4.13 scripts/install-lm-eval.sh
#
# specexp runs it against a server a sweep started (`workload=task_scores`, README "Answers with
# and without the drafter"); its API models need no torch.
set -euo pipefail

version="${LM_EVAL_VERSION:-0.4.13}"
python="${PYTHON:-python3}"
cache="${SPECEXP_CACHE:-$HOME/.cache/specexp}/lm-eval/$version"
venv="$cache/venv"
binary="$venv/bin/lm_eval"
stamp="$cache/installed"

if [ -f "$stamp" ] && [ -x "$binary" ]; then
  echo "$binary"
  exit 0
fi

"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
  || { echo "install-lm-eval: $python must be Python >= 3.10 (set PYTHON=)" >&2; exit 1; }

mkdir -p "$cache"
exec 9> "$cache/.lock"
flock 9   # a second install waits for the first, then finds the stamp
if [ -f "$stamp" ] && [ -x "$binary" ]; then
  echo "$binary"
  exit 0
fi

rm -rf "$venv"
echo "install-lm-eval: creating $venv" >&2
"$python" -m venv "$venv"
"$venv/bin/python" -m pip --quiet --disable-pip-version-check install "lm-eval[api]==$version" >&2
"$binary" --help > /dev/null
touch "$stamp"
echo "$binary"

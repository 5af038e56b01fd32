#!/bin/sh
# usage: pack.sh REPO ARCHIVE
# ARCHIVE becomes a gzip tar of the files git tracks or would track in REPO (what `git status`
# shows, not what .gitignore hides), in name order, owned by 0:0, with their modification
# times (make then rebuilds only what changed) and no gzip time stamp: packing the same tree
# twice gives the same bytes, so the copy to the nodes changes nothing. ARCHIVE is replaced only
# when its bytes change. Prints its sha256.
set -eu
repo=$1 out=$2
mkdir -p "$(dirname "$out")"
git -C "$repo" ls-files -z --cached --others --exclude-standard --deduplicate |
  tar -C "$repo" --null -T - --ignore-failed-read --sort=name --owner=0 --group=0 --numeric-owner \
    --no-recursion -cf - 2>/dev/null | gzip -n > "$out.tmp"
if cmp -s "$out.tmp" "$out"; then rm -f "$out.tmp"; else mv "$out.tmp" "$out"; fi
sha256sum "$out" | cut -d' ' -f1

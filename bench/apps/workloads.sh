#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Real programs from this machine, as workloads for the preload shim: the
# identical-output test (tests/preload/real_programs.sh) and the lab's
# preload-apps experiment both use this one list.
#
#   workloads.sh setup DIR     write the deterministic inputs into DIR
#   workloads.sh list          print "name|program|shell command" lines (run
#                              in DIR; stdout is the output to compare)
#   workloads.sh env           print the environment the commands need
set -u

setup() {
  local dir=$1
  mkdir -p "$dir" && cd "$dir" || exit 2
  # 200k lines of pseudo-random keys, and a hex dump of 3 MB of them.
  awk 'BEGIN { x = 12345; for (i = 0; i < 200000; i++) { x = (x * 1103515245 + 12345) % 2147483648;
       printf "%d %s-%d\n", x % 100003, substr("abcdefghijklmnopqrstuvwxyz", x % 26 + 1, x % 7 + 1), i } }' > lines.txt
  head -c 3000000 lines.txt | od -An -tx1 > blob.txt
  cat > work.py <<'PY'
import hashlib, sqlite3, zlib, json
db = sqlite3.connect(":memory:")
db.execute("create table t (k integer, v text)")
with open("lines.txt") as f:
    rows = [(int(a), b) for a, b in (line.split() for line in f)]
db.executemany("insert into t values (?, ?)", rows)
db.execute("create index tk on t (k)")
top = db.execute("select k, count(*), min(v), max(v) from t group by k order by 2 desc, 1 limit 20").fetchall()
data = open("blob.txt", "rb").read()
packed = zlib.compress(data, 9)
assert zlib.decompress(packed) == data
print(json.dumps(top))
print(len(packed), hashlib.sha256(packed).hexdigest())
print(hashlib.sha256(bytes(bytearray(range(256)) * 40000)).hexdigest())
PY
}

list() {
  cat <<'LIST'
sort|sort|sort -k1,1n -k2,2 lines.txt
gzip|gzip|gzip -9 -n -c lines.txt
gunzip|gzip|gzip -n -c blob.txt | gzip -d -c
python3|python3|python3 work.py
git|git|rm -rf r && git init -q r && cp lines.txt blob.txt r/ && cd r && git add . && git commit -q -m one && git gc -q && git log --stat && git cat-file -p HEAD^{tree} && git rev-parse HEAD
tar|tar|tar --sort=name --mtime=@0 --owner=0 --group=0 -cf - lines.txt blob.txt | md5sum
LIST
}

# Fixed identities and dates make git's output reproducible.
env_lines() {
  cat <<'ENV'
GIT_AUTHOR_NAME=memkit
GIT_AUTHOR_EMAIL=memkit@example.invalid
GIT_COMMITTER_NAME=memkit
GIT_COMMITTER_EMAIL=memkit@example.invalid
GIT_AUTHOR_DATE=2026-01-01T00:00:00Z
GIT_COMMITTER_DATE=2026-01-01T00:00:00Z
GIT_CONFIG_NOSYSTEM=1
GIT_CONFIG_GLOBAL=/dev/null
ENV
}

case "${1:-}" in
  setup) setup "${2:?setup needs a directory}" ;;
  list) list ;;
  env) env_lines ;;
  *) echo "usage: workloads.sh setup DIR | list | env" >&2; exit 2 ;;
esac

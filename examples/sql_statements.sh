#!/usr/bin/env bash
# Every chronos SQL statement, in one story, on a small users table: each command is printed as
# `$ chronos shop ...` followed by what it printed (docs/sql.md shows a run).
#
#   examples/sql_statements.sh [folder]    the database is <folder>/shop (default: a new
#                                          temporary folder); a shop left there by an earlier
#                                          run is replaced
#
# Uses `chronos` from PATH, or the command in $CHRONOS. Exits non-zero if a step fails, except the
# three that fail on purpose (a rebase with a conflict, two malformed statements).
set -euo pipefail

CHRONOS=${CHRONOS:-chronos}
dir=${1:-$(mktemp -d)}
db="$dir/shop"
if [ -f "$db/chronos.db" ]; then
  rm -rf "$db" # an earlier run's database
fi
mkdir -p "$dir"
cd "$dir"
echo "# in $dir"

# c [-b BRANCH] STATEMENT...: print the command, then run the statements (-c each) on shop
c() {
  local branch=() shown=""
  if [ "$1" = -b ]; then
    branch=(-b "$2")
    case $2 in *" "*) shown=" -b '$2'" ;; *) shown=" -b $2" ;; esac
    shift 2
  fi
  local args=()
  for stmt in "$@"; do
    args+=(-c "$stmt")
    shown+=" -c \"$stmt\""
  done
  echo "\$ chronos shop$shown"
  "$CHRONOS" shop "${branch[@]}" "${args[@]}" 2>&1
}

title() { printf '\n## %s\n' "$1"; }

title "A database with a users table"
echo "\$ chronos init shop"
"$CHRONOS" init shop
c "create table users(id integer primary key autoincrement, name text, email text unique)"
c "insert into users(name, email) values ('Ada', 'ada@x.org'), ('Grace', 'grace@x.org'), ('Alan', 'alan@x.org')"

title "Fork a world, change it, look at the diff"
c "FORK WORLD task-1 FROM main WITH (task = 'fix names', ticket = 42)"
c -b task-1 "update users set name = 'Ada Lovelace' where id = 1"
c -b task-1 "insert into users(name, email) values ('Edsger', 'edsger@x.org')"
c "DIFF task-1"
c "DIFF task-1 AS SQL"
c "DIFF task-1 TO main"
c -b task-1 "DIFF"

title "Preview the merge, then merge exactly the version previewed"
c "MERGE WORLD task-1 DRY RUN"
c "SHOW WORLDS"
c "MERGE WORLD task-1 AT VERSION 2"
c "select * from users"

title "A checkpoint, a mistake, and back to the checkpoint"
sleep 1
c "CHECKPOINT WORLD main AS before-cleanup"
c "delete from users where name like 'A%'"
c "ROLLBACK WORLD main TO before-cleanup"
c "SHOW HISTORY main LIMIT 5"

title "Back to a moment"
sleep 2 # the rollback is over a second old: '-1 second' is after it, before the update
c "update users set email = upper(email)" "RESTORE WORLD main TO '-1 second'" "select * from users"

title "Take a merge back out"
c "UNDO MERGE task-1"
c "select * from users"

title "Take back one caller's changes since a moment, on every branch"
c "FORK WORLD task-2 WITH (task = 'full names')"
sleep 1
since=$(date '+%Y-%m-%d %H:%M:%S')
sleep 1
c -b task-2 "update users set email = null"
c "delete from users where id = 2"
c "UNDO AGENT owner SINCE '$since'"
c -b task-2 "select * from users order by id"

title "Rebase a world on what its parent has now"
c -b task-2 "update users set name = 'Alan Turing' where id = 3"
c "update users set email = 'alan@turing.org' where id = 3" "insert into users(name, email) values ('Barbara', 'barbara@x.org')"
c "REBASE WORLD task-2" || true # both changed users/3: refused, nothing changed
c "REBASE WORLD task-2 BY COLUMNS"
c -b task-2 "select * from users order by id"

title "Throw a world away, with the worlds forked from it"
c "FORK WORLD task-2-review FROM task-2"
c "DISCARD WORLD task-2 CASCADE"
c "SHOW WORLDS"

title "Read the past"
c "select * from users order by id"
c "select * from users AS OF '$since' order by id"
c -b "main@$since" "select count(*) from users"

title "Malformed statements: the error shows the form"
c "FORK WORLD task-3 WITH (task = fix)" || true
c "RESTORE WORLD main TO -10 minutes" || true

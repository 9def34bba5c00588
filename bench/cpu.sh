# CPU time from /proc, sourced by bench/cpu-split.sh, bench/pgbench-ref.sh (CPU=1) and bench/stream-ab.sh (not run on its own).
# Ticks are utime+stime (/proc/PID/stat fields 14 and 15, 100 per second).

# The ticks a process has used so far; empty when it is gone.
proc_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || true; }

# Remember the ticks of every PostgreSQL process alive now.
pg_ticks_mark() {
    declare -gA PG_TICKS=()
    local p
    for p in $(pgrep -x postgres); do PG_TICKS[$p]=$(proc_ticks "$p"); done
}

# CPU seconds used since pg_ticks_mark by the PostgreSQL processes alive at both moments (the
# connection pool's backends; one that started or ended in between is not counted).
pg_cpu_since_mark() {
    local t=0 p n
    for p in "${!PG_TICKS[@]}"; do
        n=$(proc_ticks "$p")
        if [[ -n $n && -n ${PG_TICKS[$p]} ]]; then t=$((t + n - PG_TICKS[$p])); fi
    done
    echo "scale=2; $t / 100" | bc
}

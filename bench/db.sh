# Sourced by point.sh and instructions.sh: a fresh database for one server under test.
#   fresh_db NAME DIR   sets `url`: with DATABASE=postgres://USER@HOST:PORT[/ignored] a new database
#                       NAME of that cluster (and `admin`, `db` for drop_db), else a SQLite file in DIR.
#   drop_db             drops the PostgreSQL database fresh_db made (nothing for SQLite).
fresh_db() {
    db=
    if [[ ${DATABASE:-} == postgres://* ]]; then
        admin=${DATABASE%/}; admin=${admin#postgres://}; admin=postgres://${admin%%/*}
        db=$1
        psql -q "$admin/postgres" -c "create database $db" >/dev/null
        url=$admin/$db
    else
        url=sqlite:$2/cat.db
    fi
}

drop_db() {
    [[ -z $db ]] || psql -q "$admin/postgres" -c "drop database if exists $db" >/dev/null || true
}

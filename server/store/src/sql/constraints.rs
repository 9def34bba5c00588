//! DDL of the catalogue's constraints (`constraint_add_*`) on entry tables, per dialect. Every
//! identifier comes from ids: the constraint of id `k` on collection `c` is `e<c>_k<k>`.
//!
//! PostgreSQL gets real table constraints: `CHECK (a IS NOT NULL)` for not-null (PostgreSQL 15
//! cannot name a NOT NULL constraint, and its 23502 error names only the column; a named CHECK
//! makes the violation name the constraint), `UNIQUE`, `FOREIGN KEY` and `CHECK`. It validates
//! existing rows itself when one is added.
//!
//! SQLite cannot add a constraint to an existing table (`ALTER TABLE … ADD CONSTRAINT` does not
//! exist). Rebuilding the table (create a copy with the constraint, copy every row, drop, rename,
//! recreate its indexes) would rewrite a million-row collection for each added or dropped
//! constraint and hold the write lock all that time; triggers that `RAISE(ABORT, …)` are added and
//! dropped in constant time, run inside the writing statement (so inside transactions and
//! uploads), and carry the constraint's id in their message. So SQLite constraints are triggers
//! `e<c>_k<k>_*` (plus an index `e<c>_k<k>` where a trigger looks rows up), and existing rows are
//! checked with [`violation_probe`] before they are created.

use ardacat_core::store::{ConstraintDef, ConstraintRule, IndexColumn};

use super::Dialect;
use super::compile::{attr_column, table_name};

/// The message of a SQLite constraint trigger: this prefix and the constraint's id.
pub const SQLITE_RAISE_PREFIX: &str = "ardacat constraint ";

/// SQL name of constraint `id` of collection `collection_id`: `e<c>_k<id>`.
pub fn constraint_name(collection_id: i64, id: i64) -> String {
    format!("{}_k{id}", table_name(collection_id))
}

/// The constraint id in a database constraint's name (`e<c>_k<id>`), if it is one of ours.
pub fn constraint_id_of(sql_name: &str) -> Option<i64> {
    let rest = sql_name.strip_prefix('e')?;
    let (c, k) = rest.split_once("_k")?;
    if c.is_empty() || !c.bytes().all(|b| b.is_ascii_digit()) || k.is_empty() || !k.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    k.parse().ok()
}

/// The column a reference points at.
fn referred_column(c: &IndexColumn) -> String {
    match c {
        IndexColumn::File => "file".into(),
        IndexColumn::Attr(a) => attr_column(*a),
    }
}

/// Statements that make `k` a database constraint on the existing entry table(s). `check_sql` is
/// the compiled condition of a check, as stored for this dialect (`NEW.`-qualified on SQLite,
/// bare on PostgreSQL).
pub fn create_ddl(d: Dialect, k: &ConstraintDef, check_sql: Option<&str>) -> Vec<String> {
    let t = table_name(k.collection_id);
    let n = constraint_name(k.collection_id, k.id);
    match d {
        Dialect::Postgres => {
            let body = match &k.rule {
                ConstraintRule::NotNull { attr } => format!("CHECK ({} IS NOT NULL)", attr_column(*attr)),
                ConstraintRule::Unique { attr } => format!("UNIQUE ({})", attr_column(*attr)),
                ConstraintRule::Reference { attr, collection, column } => format!(
                    "FOREIGN KEY ({}) REFERENCES {} ({})",
                    attr_column(*attr),
                    table_name(*collection),
                    referred_column(column)
                ),
                ConstraintRule::Check { .. } => format!("CHECK ({})", check_sql.unwrap_or("TRUE")),
            };
            vec![format!("ALTER TABLE {t} ADD CONSTRAINT {n} {body}")]
        }
        Dialect::Sqlite => {
            let raise = format!("BEGIN SELECT RAISE(ABORT, '{SQLITE_RAISE_PREFIX}{}'); END", k.id);
            let trigger = |suffix: &str, when: &str, table: &str, cond: &str| {
                format!("CREATE TRIGGER {n}_{suffix} {when} ON {table} WHEN {cond} {raise}")
            };
            match &k.rule {
                ConstraintRule::NotNull { attr } => {
                    let a = attr_column(*attr);
                    vec![
                        trigger("i", "BEFORE INSERT", &t, &format!("NEW.{a} IS NULL")),
                        trigger("u", &format!("BEFORE UPDATE OF {a}"), &t, &format!("NEW.{a} IS NULL")),
                    ]
                }
                ConstraintRule::Unique { attr } => {
                    let a = attr_column(*attr);
                    // AFTER: the new row is in the table with its id, so "another row" is exact.
                    let dup = format!(
                        "NEW.{a} IS NOT NULL AND EXISTS (SELECT 1 FROM {t} WHERE {a} = NEW.{a} AND id <> NEW.id)"
                    );
                    vec![
                        format!("CREATE INDEX {n} ON {t} ({a})"),
                        trigger("i", "AFTER INSERT", &t, &dup),
                        trigger("u", &format!("AFTER UPDATE OF {a}"), &t, &dup),
                    ]
                }
                ConstraintRule::Reference { attr, collection, column } => {
                    let a = attr_column(*attr);
                    let r = table_name(*collection);
                    let rc = referred_column(column);
                    let missing =
                        format!("NEW.{a} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {r} WHERE {rc} = NEW.{a})");
                    let used = format!("EXISTS (SELECT 1 FROM {t} WHERE {a} = OLD.{rc})");
                    vec![
                        format!("CREATE INDEX {n} ON {t} ({a})"),
                        trigger("i", "BEFORE INSERT", &t, &missing),
                        trigger("u", &format!("BEFORE UPDATE OF {a}"), &t, &missing),
                        trigger("d", "BEFORE DELETE", &r, &used),
                        trigger(
                            "p",
                            &format!("BEFORE UPDATE OF {rc}"),
                            &r,
                            &format!("NEW.{rc} IS NOT OLD.{rc} AND {used}"),
                        ),
                    ]
                }
                ConstraintRule::Check { .. } => {
                    // A condition that is NULL (unknown) passes, as in an SQL CHECK.
                    let broken = format!("NOT ({})", check_sql.unwrap_or("1"));
                    vec![trigger("i", "BEFORE INSERT", &t, &broken), trigger("u", "BEFORE UPDATE", &t, &broken)]
                }
            }
        }
    }
}

/// Statements that remove `k`'s database constraint; `has_table`: its collection's entry table
/// exists (PostgreSQL drops the table constraint; SQLite's triggers and index go by name).
pub fn drop_ddl(d: Dialect, k: &ConstraintDef, has_table: bool) -> Vec<String> {
    let n = constraint_name(k.collection_id, k.id);
    match d {
        Dialect::Postgres if has_table => {
            vec![format!("ALTER TABLE {} DROP CONSTRAINT IF EXISTS {n}", table_name(k.collection_id))]
        }
        Dialect::Postgres => Vec::new(),
        Dialect::Sqlite => {
            let mut out: Vec<String> =
                ["i", "u", "d", "p"].iter().map(|s| format!("DROP TRIGGER IF EXISTS {n}_{s}")).collect();
            out.push(format!("DROP INDEX IF EXISTS {n}"));
            out
        }
    }
}

/// A query that answers a row if existing entries break `k` (`check_query_sql`: the condition
/// compiled with the table name as qualifier). SQLite only: PostgreSQL checks existing rows when
/// the constraint is added.
pub fn violation_probe(k: &ConstraintDef, check_query_sql: Option<&str>) -> String {
    let t = table_name(k.collection_id);
    match &k.rule {
        ConstraintRule::NotNull { attr } => format!("SELECT 1 FROM {t} WHERE {} IS NULL LIMIT 1", attr_column(*attr)),
        ConstraintRule::Unique { attr } => {
            let a = attr_column(*attr);
            format!("SELECT 1 FROM {t} WHERE {a} IS NOT NULL GROUP BY {a} HAVING COUNT(*) > 1 LIMIT 1")
        }
        ConstraintRule::Reference { attr, collection, column } => {
            let a = attr_column(*attr);
            let r = table_name(*collection);
            format!(
                "SELECT 1 FROM {t} WHERE {t}.{a} IS NOT NULL AND NOT EXISTS \
                 (SELECT 1 FROM {r} AS x WHERE x.{} = {t}.{a}) LIMIT 1",
                referred_column(column)
            )
        }
        ConstraintRule::Check { .. } => {
            format!("SELECT 1 FROM {t} WHERE NOT ({}) LIMIT 1", check_query_sql.unwrap_or("1"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(constraint_name(5, 12), "e5_k12");
        assert_eq!(constraint_id_of("e5_k12"), Some(12));
        assert_eq!(constraint_id_of("e5_file_key"), None);
        assert_eq!(constraint_id_of("e5_k"), None);
        assert_eq!(constraint_id_of("entry_constraints_kind_check"), None);
    }

    #[test]
    fn sqlite_not_null_is_two_triggers() {
        let k = ConstraintDef { id: 3, collection_id: 5, name: "c".into(), rule: ConstraintRule::NotNull { attr: 7 } };
        let ddl = create_ddl(Dialect::Sqlite, &k, None);
        assert_eq!(
            ddl[0],
            "CREATE TRIGGER e5_k3_i BEFORE INSERT ON e5 WHEN NEW.a7 IS NULL BEGIN SELECT RAISE(ABORT, 'ardacat constraint 3'); END"
        );
        assert!(ddl[1].starts_with("CREATE TRIGGER e5_k3_u BEFORE UPDATE OF a7 ON e5"), "{}", ddl[1]);
        assert_eq!(
            create_ddl(Dialect::Postgres, &k, None),
            vec!["ALTER TABLE e5 ADD CONSTRAINT e5_k3 CHECK (a7 IS NOT NULL)".to_string()]
        );
    }
}
